/** Settings: the person's access tokens, and the organization's webhook destination with its delivery log. */
import { Divider, Stack, Title } from '@mantine/core';
import { SettingsTokens } from '../components/SettingsTokens';
import { SettingsWebhook } from '../components/SettingsWebhook';

export function SettingsPage() {
  return (
    <Stack gap="xl">
      <Title order={1}>Settings</Title>
      <SettingsTokens />
      <Divider />
      <SettingsWebhook />
    </Stack>
  );
}
