/**
 * Shorthands for calling the current surface (`/api/...`) as a given service token, and its error body.
 */
import type { TestApp } from './app';
import { bearer } from './factories';

/** The current surface's error envelope. */
export const currentError = (code: string, message: string): object => ({ error: { code, message } });

/**
 * @param t the app under test.
 * @param token a `svc_` token.
 * @returns get/post/patch/del bound to /api and the token.
 */
export function currentAs(t: TestApp, token: string) {
  const auth = bearer(token);
  return {
    get: (p: string) => t.request.get(`/api${p}`).set('Authorization', auth),
    post: (p: string, body?: object) => t.request.post(`/api${p}`).set('Authorization', auth).send(body),
    patch: (p: string, body?: object) => t.request.patch(`/api${p}`).set('Authorization', auth).send(body),
    del: (p: string) => t.request.delete(`/api${p}`).set('Authorization', auth),
  };
}

/** For tests that only read the current surface's route declarations: the contract routes never serve here. */
export const noContract = (): never => {
  throw new Error('the contract is not served by declaration-only tests');
};
