/**
 * The console's one HTTP client: openapi-fetch typed by the paths of the service's own OpenAPI document
 * (`schema.d.ts`, generated from the server's route declarations by the console build: scripts/lib/consoleBuild.ts).
 * Same origin: the session cookie goes with every request, and no token is ever held by the page.
 */
import createClient from 'openapi-fetch';
import { errorMessage } from '../lib/errors';
import type { paths } from './schema';

export const api = createClient<paths>({ baseUrl: '' });

/** A failed request: its HTTP status and the message of the service's error body. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/**
 * @param result what an openapi-fetch call resolved to.
 * @returns its data.
 * @throws ApiError when the service answered an error.
 */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.error !== undefined || !result.response.ok) {
    throw new ApiError(result.response.status, errorMessage(result.error, result.response.status));
  }
  return result.data as T;
}
