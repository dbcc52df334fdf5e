/** Execution (issue 36: being built). */
import { Stack, Text, Title } from '@mantine/core';

export function ExecutionPage() {
  return (
    <Stack>
      <Title order={1}>Execution</Title>
      <Text c="dimmed">This page is being built.</Text>
    </Stack>
  );
}
