/**
 * Settings › Webhook (/api/messaging-integration): the destination (URL, event types, enabled), the signing secret
 * shown once (first save, rotation), a test delivery, and the delivery log with redelivery.
 */
import {
  Alert,
  Button,
  Checkbox,
  Code,
  CopyButton,
  Group,
  Loader,
  SimpleGrid,
  Stack,
  Switch,
  Text,
} from '@mantine/core';
import { TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';
import type { paths } from '../api/schema';
import { eventTypesBody } from '../lib/settings';
import { WebhookDeliveries } from './SettingsWebhookDeliveries';

type IntegrationBody = paths['/api/messaging-integration']['put']['requestBody']['content']['application/json'];
type EventType = NonNullable<IntegrationBody['event_types']>[number];
type Integration = paths['/api/messaging-integration']['get']['responses'][200]['content']['application/json'];

/** Every event type (a Record: the build fails when the API's list changes and this one does not). */
const EVENT_TYPE_SET: Record<EventType, true> = {
  'job.created': true,
  'job.status_changed': true,
  'job.review_requested': true,
  'job.review_overdue': true,
  'job.review_escalated': true,
  'job.done': true,
  'mission.run_started': true,
  'mission.run_skipped': true,
  'mission.updated': true,
  'execution.completed': true,
  'execution.failed': true,
  'chat.status_changed': true,
  'task.created': true,
  'task.updated': true,
  'task.status_changed': true,
  'task.completed': true,
  'task.assigned': true,
  'repo.clone_started': true,
  'repo.clone_completed': true,
  'repo.clone_failed': true,
  'budget.threshold': true,
};
const EVENT_TYPES = Object.keys(EVENT_TYPE_SET) as EventType[];

/** A secret in clear, shown once. */
function OnceSecret(props: { secret: string; onDone: () => void }) {
  return (
    <Alert color="green" title="Signing secret" data-testid="new-secret">
      <Stack gap="xs">
        <Text size="sm" fw={600}>
          Copy it now: you will not see it again.
        </Text>
        <Code block data-testid="new-secret-value" style={{ wordBreak: 'break-all' }}>
          {props.secret}
        </Code>
        <Group>
          <CopyButton value={props.secret}>
            {({ copied, copy }) => (
              <Button size="compact-md" variant="light" onClick={copy}>
                {copied ? 'Copied' : 'Copy secret'}
              </Button>
            )}
          </CopyButton>
          <Button size="compact-md" variant="default" onClick={props.onDone}>
            Done
          </Button>
        </Group>
      </Stack>
    </Alert>
  );
}

function DestinationForm(props: { integration: Integration['integration']; onSecret: (s: string) => void }) {
  const { integration } = props;
  const queryClient = useQueryClient();
  const [url, setUrl] = useState(integration.url ?? '');
  const [enabled, setEnabled] = useState(integration.url ? integration.enabled : true);
  const [types, setTypes] = useState<string[]>(integration.event_types ?? []);
  const save = useMutation({
    mutationFn: async (body: IntegrationBody) => unwrap(await api.PUT('/api/messaging-integration', { body })),
    onSuccess: (data) => {
      if ('signing_secret' in data && typeof data.signing_secret === 'string') props.onSecret(data.signing_secret);
      queryClient.setQueryData(['webhook'], { integration: data.integration });
      void queryClient.invalidateQueries({ queryKey: ['webhook-deliveries'] });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate({ url: url.trim(), enabled, event_types: eventTypesBody(types as EventType[], EVENT_TYPES) });
  };
  return (
    <form onSubmit={submit} aria-label="Webhook destination">
      <Stack>
        <TextInput
          label="Destination URL"
          description="https only; the service signs every delivery with the signing secret"
          type="url"
          required
          value={url}
          onChange={(e) => setUrl(e.currentTarget.value)}
          maxLength={2000}
        />
        <Switch label="Deliver events" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} />
        <Checkbox.Group
          label="Event types"
          description="None ticked: every type (also types added later)"
          value={types}
          onChange={setTypes}
        >
          <SimpleGrid cols={{ base: 1, sm: 2, md: 3 }} mt="xs" spacing={6}>
            {EVENT_TYPES.map((t) => (
              <Checkbox key={t} value={t} label={t} />
            ))}
          </SimpleGrid>
        </Checkbox.Group>
        {save.isError && (
          <Alert color="red" role="alert">
            {save.error.message}
          </Alert>
        )}
        {save.isSuccess && <Text role="status">Saved.</Text>}
        <Group>
          <Button type="submit" loading={save.isPending}>
            Save destination
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

export function SettingsWebhook() {
  const queryClient = useQueryClient();
  const [secret, setSecret] = useState<string | null>(null);
  const [confirmRotate, setConfirmRotate] = useState(false);
  const integration = useQuery({
    queryKey: ['webhook'],
    queryFn: async () => unwrap(await api.GET('/api/messaging-integration')),
  });
  const rotate = useMutation({
    mutationFn: async () => unwrap(await api.POST('/api/messaging-integration/signing-secret/rotate', { body: {} })),
    onSuccess: (data) => {
      setConfirmRotate(false);
      setSecret(data.signing_secret);
      queryClient.setQueryData(['webhook'], { integration: data.integration });
    },
  });
  const test = useMutation({
    mutationFn: async () => unwrap(await api.POST('/api/messaging-integration/test')),
  });
  const configured = integration.data?.integration.url != null;

  return (
    <Stack component="section" aria-labelledby="webhook-heading">
      <Title order={2} id="webhook-heading">
        Webhook
      </Title>
      {integration.isPending && <Loader aria-label="Loading the webhook destination" />}
      {integration.isError && (
        <Alert color="red" role="alert">
          {integration.error.message}
        </Alert>
      )}
      {integration.data?.integration.disabled && (
        <Alert color="orange" title="Delivery turned itself off">
          {integration.data.integration.disabled.reason} Saving the destination turns it on again.
        </Alert>
      )}
      {integration.data && (
        <DestinationForm
          key={integration.data.integration.updated_at ?? 'new'}
          integration={integration.data.integration}
          onSecret={setSecret}
        />
      )}
      {secret && <OnceSecret secret={secret} onDone={() => setSecret(null)} />}
      {configured && (
        <Group wrap="wrap">
          <Button variant="light" loading={test.isPending} onClick={() => test.mutate()}>
            Send test delivery
          </Button>
          {!confirmRotate ? (
            <Button variant="default" onClick={() => setConfirmRotate(true)}>
              Rotate signing secret
            </Button>
          ) : (
            <Group gap="xs" role="group" aria-label="Confirm rotating the signing secret" wrap="wrap">
              <Text size="sm">The current secret stops signing at once. Rotate?</Text>
              <Button color="red" loading={rotate.isPending} onClick={() => rotate.mutate()}>
                Yes, rotate
              </Button>
              <Button variant="default" onClick={() => setConfirmRotate(false)}>
                Cancel
              </Button>
            </Group>
          )}
        </Group>
      )}
      {test.data && (
        <Alert
          color={test.data.result.delivered ? 'green' : 'red'}
          role="status"
          title={test.data.result.delivered ? 'Test delivered' : 'Test not delivered'}
        >
          Receiver’s status: {test.data.result.status ?? 'none'} · {test.data.result.latency_ms} ms
          {test.data.result.error ? ` · ${test.data.result.error}` : ''}
        </Alert>
      )}
      {(test.isError || rotate.isError) && (
        <Alert color="red" role="alert">
          {(test.error ?? rotate.error)?.message}
        </Alert>
      )}
      {configured && <WebhookDeliveries />}
    </Stack>
  );
}
