/** Missions (issue 36: being built). */
import { Stack, Text, Title } from '@mantine/core';

export function MissionsPage() {
  return (
    <Stack>
      <Title order={1}>Missions</Title>
      <Text c="dimmed">This page is being built.</Text>
    </Stack>
  );
}
