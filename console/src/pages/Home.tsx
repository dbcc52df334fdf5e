import { Navigate } from 'react-router';

/** The console's root leads to the chats. */
export function Home() {
  return <Navigate to="/chats" replace />;
}
