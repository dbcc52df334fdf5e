/** Tasks (issue 36: being built). */
import { Stack, Text, Title } from '@mantine/core';

export function TasksPage() {
  return (
    <Stack>
      <Title order={1}>Tasks</Title>
      <Text c="dimmed">This page is being built.</Text>
    </Stack>
  );
}
