/** The session as the pages read it: one query, shared (react-query), null when signed out. */
import { useQuery } from '@tanstack/react-query';
import { readSession, type Session } from './session';

export const SESSION_KEY = ['session'] as const;

export function useSession() {
  return useQuery<Session | null>({ queryKey: SESSION_KEY, queryFn: readSession, staleTime: 60_000 });
}
