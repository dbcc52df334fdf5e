/** Pages behind the session: signed out, they lead to the sign-in page (and back here after it). */
import { Center, Loader, Text } from '@mantine/core';
import { Navigate, Outlet, useLocation } from 'react-router';
import { useSession } from '../api/useSession';

export function RequireSession() {
  const session = useSession();
  const location = useLocation();
  if (session.isPending)
    return (
      <Center h="100vh">
        <Loader aria-label="Loading" />
      </Center>
    );
  if (session.isError)
    return (
      <Center h="100vh" p="md">
        <Text role="alert">The service cannot be reached: {session.error.message}</Text>
      </Center>
    );
  if (!session.data) {
    const next = `${location.pathname}${location.search}`;
    return <Navigate to={`/sign-in?next=${encodeURIComponent(next)}`} replace />;
  }
  return <Outlet />;
}
