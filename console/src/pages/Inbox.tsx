/** Review inbox (issue 36: being built). */
import { Stack, Text, Title } from '@mantine/core';

export function InboxPage() {
  return (
    <Stack>
      <Title order={1}>Review inbox</Title>
      <Text c="dimmed">This page is being built.</Text>
    </Stack>
  );
}
