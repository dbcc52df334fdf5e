/** Agent (issue 36: being built). */
import { Stack, Text, Title } from '@mantine/core';

export function AgentEditPage() {
  return (
    <Stack>
      <Title order={1}>Agent</Title>
      <Text c="dimmed">This page is being built.</Text>
    </Stack>
  );
}
