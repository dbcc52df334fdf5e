/** Workspace (issue 36: being built). */
import { Stack, Text, Title } from '@mantine/core';

export function WorkspacePage() {
  return (
    <Stack>
      <Title order={1}>Workspace</Title>
      <Text c="dimmed">This page is being built.</Text>
    </Stack>
  );
}
