/** Mission (issue 36: being built). */
import { Stack, Text, Title } from '@mantine/core';

export function MissionPage() {
  return (
    <Stack>
      <Title order={1}>Mission</Title>
      <Text c="dimmed">This page is being built.</Text>
    </Stack>
  );
}
