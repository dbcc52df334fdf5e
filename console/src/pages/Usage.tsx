/** Usage (issue 36: being built). */
import { Stack, Text, Title } from '@mantine/core';

export function UsagePage() {
  return (
    <Stack>
      <Title order={1}>Usage</Title>
      <Text c="dimmed">This page is being built.</Text>
    </Stack>
  );
}
