/** Job (issue 36: being built). */
import { Stack, Text, Title } from '@mantine/core';

export function JobPage() {
  return (
    <Stack>
      <Title order={1}>Job</Title>
      <Text c="dimmed">This page is being built.</Text>
    </Stack>
  );
}
