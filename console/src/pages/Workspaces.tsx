/** Workspaces (issue 36: being built). */
import { Stack, Text, Title } from '@mantine/core';

export function WorkspacesPage() {
  return (
    <Stack>
      <Title order={1}>Workspaces</Title>
      <Text c="dimmed">This page is being built.</Text>
    </Stack>
  );
}
