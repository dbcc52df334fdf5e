/** The message of either error shape of the service: v1 `{error:true,message}`, current `{error:{code,message}}`. */

/**
 * @param body a parsed error body (or anything else).
 * @param status the HTTP status, for a body without a message.
 * @returns a sentence for a person.
 */
export function errorMessage(body: unknown, status: number): string {
  if (body && typeof body === 'object') {
    const b = body as { error?: unknown; message?: unknown };
    if (b.error && typeof b.error === 'object') {
      const m = (b.error as { message?: unknown }).message;
      if (typeof m === 'string' && m) return m;
    }
    if (typeof b.message === 'string' && b.message) return b.message;
  }
  return `The service answered ${status}`;
}
