/** The signed-in frame: the organization, navigation, Sign out, and the page. */
import { AppShell, Button, Group, Text } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { NavLink, Outlet, useNavigate } from 'react-router';
import { signOut } from '../api/session';
import { SESSION_KEY, useSession } from '../api/useSession';

const links = [
  { to: '/chats', label: 'Chats' },
  { to: '/inbox', label: 'Inbox' },
  { to: '/tasks', label: 'Tasks' },
  { to: '/agents', label: 'Agents' },
  { to: '/missions', label: 'Missions' },
  { to: '/executions', label: 'Executions' },
  { to: '/workspaces', label: 'Workspaces' },
  { to: '/usage', label: 'Usage' },
  { to: '/settings', label: 'Settings' },
];

export function Layout() {
  const session = useSession().data;
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const out = useMutation({
    mutationFn: signOut,
    onSettled: () => {
      queryClient.clear();
      queryClient.setQueryData(SESSION_KEY, null);
      void navigate('/sign-in', { replace: true });
    },
  });
  return (
    <AppShell header={{ height: 'auto' }} padding="md">
      <AppShell.Header p="xs" pos="static">
        <Group justify="space-between" gap="xs" wrap="wrap">
          <Group gap="xs" wrap="wrap">
            <Text fw={700}>Console</Text>
            <nav aria-label="Main">
              <Group gap={4} wrap="wrap">
                {links.map((l) => (
                  <Button key={l.to} component={NavLink} to={l.to} variant="subtle" size="compact-md">
                    {l.label}
                  </Button>
                ))}
              </Group>
            </nav>
          </Group>
          <Group gap="xs" wrap="wrap">
            {session && (
              <Text size="sm" c="dimmed">
                {session.user.name || session.user.email} · {session.organization.name}
              </Text>
            )}
            <Button variant="default" size="compact-md" onClick={() => out.mutate()} loading={out.isPending}>
              Sign out
            </Button>
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Main pt="md">
        <main>
          <Outlet />
        </main>
      </AppShell.Main>
    </AppShell>
  );
}
