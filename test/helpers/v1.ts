/**
 * Shorthands for calling the v1 surface as a given token, and the v1 error body.
 */
import type { TestApp } from './app';
import { bearer } from './factories';

/** The v1 error envelope. */
export const v1Error = (statusCode: number, statusMessage: string, message: string): object => ({
  error: true,
  statusCode,
  statusMessage,
  message,
});

/**
 * @param t the app under test.
 * @param token a `td_` token.
 * @returns get/post/patch/del bound to /api/v1 and the token.
 */
export function v1As(t: TestApp, token: string) {
  const auth = bearer(token);
  return {
    get: (p: string) => t.request.get(`/api/v1${p}`).set('Authorization', auth),
    post: (p: string, body?: object | string) => t.request.post(`/api/v1${p}`).set('Authorization', auth).send(body),
    patch: (p: string, body?: object) => t.request.patch(`/api/v1${p}`).set('Authorization', auth).send(body),
    del: (p: string) => t.request.delete(`/api/v1${p}`).set('Authorization', auth),
  };
}
