/** The console's paths: the chatUrl form the API gives agents (`/<org>/spaces/<spaceId>/chats/<chatId>`). */

/**
 * @param chat its organization, space (workspace) and id.
 * @returns the chat's console path.
 */
export function chatPath(chat: { organizationId: string; spaceId: string; chatId: string }): string {
  return `/${encodeURIComponent(chat.organizationId)}/spaces/${encodeURIComponent(chat.spaceId)}/chats/${encodeURIComponent(chat.chatId)}`;
}

/**
 * Where to go after signing in: a path of this console only (never another origin, never the sign-in page).
 * @param next the `next` query parameter.
 * @returns a safe local path.
 */
export function nextPath(next: string | null): string {
  if (!next || !next.startsWith('/') || next.startsWith('//') || next.startsWith('/\\')) return '/chats';
  if (next === '/sign-in' || next.startsWith('/sign-in?')) return '/chats';
  return next;
}
