/** Executions (issue 36: being built). */
import { Stack, Text, Title } from '@mantine/core';

export function ExecutionsPage() {
  return (
    <Stack>
      <Title order={1}>Executions</Title>
      <Text c="dimmed">This page is being built.</Text>
    </Stack>
  );
}
