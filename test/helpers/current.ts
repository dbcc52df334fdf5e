/**
 * Shorthands for calling the current surface (`/api/...`) as a given service token, and its error body.
 */
import type { TestApp } from './app';
import { bearer } from './factories';
import { openSse, type LiveStream, type SseEvent } from './sse';

/**
 * Waits for a new rate-limit window when the current one ends within `marginMs`, so a test's requests share one
 * window (commands/rateLimits.ts: fixed windows on the epoch).
 * @param windowSeconds the window's length (RATE_LIMIT_WINDOW_SECONDS).
 * @param marginMs the time the test's requests need.
 */
export async function awayFromWindowEnd(windowSeconds: number, marginMs: number): Promise<void> {
  const left = windowSeconds * 1000 - (Date.now() % (windowSeconds * 1000));
  if (left < marginMs) await new Promise((r) => setTimeout(r, left + 50));
}

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

/** A chat stream's event that says the chat's last execution ended (`done` or `error`). */
export const chatFinished = (e: SseEvent): boolean =>
  e.event === 'chat.status' && ['done', 'error'].includes((JSON.parse(e.data) as { status: string }).status);

/**
 * Starts a chat, opens its live stream, and gives a sender of its messages.
 * @param t the app under test.
 * @param base its listening address.
 * @param token a `svc_` token of the organization.
 * @param agentId the chat's agent.
 * @param workspaceId the chat's workspace.
 * @returns the chat's id, its stream, and send (posts a message; resolves to its execution's id).
 */
export async function startChat(
  t: TestApp,
  base: string,
  token: string,
  agentId: string,
  workspaceId: string
): Promise<{ chatId: string; stream: LiveStream; send: (message: string) => Promise<string> }> {
  const api = currentAs(t, token);
  const chat = await api.post('/chats', { agent_id: agentId, workspace_id: workspaceId });
  expect(chat.status).toBe(201);
  const chatId: string = chat.body.chat.id;
  const stream = await openSse(`${base}/api/chats/${chatId}/events`, { headers: { authorization: bearer(token) } });
  const send = async (message: string): Promise<string> => {
    const sent = await api.post(`/chats/${chatId}/messages`, { message });
    expect(sent.status).toBe(201);
    return sent.body.execution.id as string;
  };
  return { chatId, stream, send };
}
