/** Settings (issue 36: being built). */
import { Stack, Text, Title } from '@mantine/core';

export function SettingsPage() {
  return (
    <Stack>
      <Title order={1}>Settings</Title>
      <Text c="dimmed">This page is being built.</Text>
    </Stack>
  );
}
