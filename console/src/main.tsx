/** The console's entry: providers, and the routes (every page but sign-in loaded on demand). */
import '@mantine/core/styles.css';
import './console.css';
import { MantineProvider, createTheme } from '@mantine/core';
import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { createBrowserRouter, RouterProvider } from 'react-router';
import { ApiError } from './api/client';
import { SESSION_KEY } from './api/useSession';
import { RequireSession } from './components/RequireSession';
import { SignInPage } from './pages/SignIn';

const theme = createTheme({ primaryColor: 'indigo' });
/** A 401 from any call means the session ended (signed out elsewhere, expired, token revoked): back to sign-in. */
const onError = (err: unknown): void => {
  if (err instanceof ApiError && err.status === 401) queryClient.setQueryData(SESSION_KEY, null);
};
const queryClient: QueryClient = new QueryClient({
  queryCache: new QueryCache({ onError }),
  mutationCache: new MutationCache({ onError }),
  defaultOptions: {
    queries: {
      // A 4xx (not found, signed out) is an answer, not a failure to retry.
      retry: (count, err) => !(err instanceof ApiError && err.status < 500) && count < 2,
      refetchOnWindowFocus: false,
    },
  },
});

const router = createBrowserRouter([
  { path: '/sign-in', element: <SignInPage /> },
  {
    element: <RequireSession />,
    children: [
      {
        lazy: async () => ({ Component: (await import('./pages/Layout')).Layout }),
        children: [
          { index: true, lazy: async () => ({ Component: (await import('./pages/Home')).Home }) },
          { path: 'chats', lazy: async () => ({ Component: (await import('./pages/Chats')).ChatsPage }) },
          { path: 'agents', lazy: async () => ({ Component: (await import('./pages/Agents')).AgentsPage }) },
          // One line per page: each page's file is its own (issue 36's slices are built side by side).
          { path: 'agents/new', lazy: async () => ({ Component: (await import('./pages/AgentEdit')).AgentEditPage }) },
          {
            path: 'agents/:agentId',
            lazy: async () => ({ Component: (await import('./pages/AgentEdit')).AgentEditPage }),
          },
          { path: 'tasks', lazy: async () => ({ Component: (await import('./pages/Tasks')).TasksPage }) },
          { path: 'inbox', lazy: async () => ({ Component: (await import('./pages/Inbox')).InboxPage }) },
          { path: 'jobs/:jobId', lazy: async () => ({ Component: (await import('./pages/Job')).JobPage }) },
          { path: 'missions', lazy: async () => ({ Component: (await import('./pages/Missions')).MissionsPage }) },
          {
            path: 'missions/:missionId',
            lazy: async () => ({ Component: (await import('./pages/Mission')).MissionPage }),
          },
          {
            path: 'executions',
            lazy: async () => ({ Component: (await import('./pages/Executions')).ExecutionsPage }),
          },
          {
            path: 'executions/:executionId',
            lazy: async () => ({ Component: (await import('./pages/Execution')).ExecutionPage }),
          },
          {
            path: 'workspaces',
            lazy: async () => ({ Component: (await import('./pages/Workspaces')).WorkspacesPage }),
          },
          {
            path: 'workspaces/:workspaceId',
            lazy: async () => ({ Component: (await import('./pages/Workspace')).WorkspacePage }),
          },
          { path: 'usage', lazy: async () => ({ Component: (await import('./pages/Usage')).UsagePage }) },
          { path: 'settings', lazy: async () => ({ Component: (await import('./pages/Settings')).SettingsPage }) },
          {
            path: ':org/spaces/:spaceId/chats/:chatId',
            lazy: async () => ({ Component: (await import('./pages/Chat')).ChatPage }),
          },
          { path: '*', lazy: async () => ({ Component: (await import('./pages/NotFound')).NotFoundPage }) },
        ],
      },
    ],
  },
]);

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <MantineProvider theme={theme}>
      <QueryClientProvider client={queryClient}>
        <RouterProvider router={router} />
      </QueryClientProvider>
    </MantineProvider>
  </StrictMode>
);
