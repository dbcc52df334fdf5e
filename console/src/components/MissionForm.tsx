/**
 * The new-mission form: title, goal, agent, and a schedule: a cron expression in a time zone (default the
 * browser's), with the next 5 runs written in the reader's own time zone as it is typed; an invalid expression or
 * zone is said at once, and the form is not sent. Or manual (runs only when triggered). And what a run due while
 * the last one is still going does (the schedule's overlap policy, docs/schedules.md).
 */
import { Alert, Button, Group, List, Radio, Select, Stack, Text, TextInput, Textarea } from '@mantine/core';
import { useMemo, useState, type FormEvent } from 'react';
import { useAgentOptions } from '../api/options';
import { browserTimeZone, cronPreview, formatRun } from '../lib/cronPreview';

export interface MissionFields {
  title: string;
  goal: string;
  agentType: string;
  schedule: ({ type: 'cron'; value: string; timezone: string } | { type: 'manual' }) & { overlap: Overlap };
}

type Overlap = 'skip' | 'buffer_one' | 'buffer_all' | 'cancel_other' | 'terminate_other' | 'allow_all';
/** The overlap policies, in words. */
const OVERLAP_OPTIONS: { value: Overlap; label: string }[] = [
  { value: 'allow_all', label: 'Start it anyway' },
  { value: 'skip', label: 'Skip the new run' },
  { value: 'buffer_one', label: 'Run it after (keep one)' },
  { value: 'buffer_all', label: 'Run them all after, in turn' },
  { value: 'cancel_other', label: 'Cancel the running one' },
  { value: 'terminate_other', label: 'Stop the running one at once' },
];

interface Props {
  saving: boolean;
  error: string | null;
  onSubmit: (fields: MissionFields) => void;
}

export function MissionForm({ saving, error, onSubmit }: Props) {
  const reader = useMemo(browserTimeZone, []);
  const agents = useAgentOptions();
  const [title, setTitle] = useState('');
  const [goal, setGoal] = useState('');
  const [agentType, setAgentType] = useState<string | null>(null);
  const [kind, setKind] = useState<'cron' | 'manual'>('cron');
  const [cron, setCron] = useState('0 9 * * 1-5');
  const [timezone, setTimezone] = useState(reader);
  const [overlap, setOverlap] = useState<Overlap>('allow_all');
  const [tried, setTried] = useState(false);
  const preview = useMemo(() => cronPreview(cron, timezone), [cron, timezone]);
  const missingAgent = tried && !agentType ? 'Pick the agent that works on it' : null;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setTried(true);
    if (!agentType) return;
    if (kind === 'cron' && !preview.ok) return;
    onSubmit({
      title,
      goal,
      agentType,
      schedule:
        kind === 'cron'
          ? { type: 'cron', value: cron.trim(), timezone: timezone.trim(), overlap }
          : { type: 'manual', overlap },
    });
  };
  return (
    <form onSubmit={submit} aria-label="New mission" noValidate>
      <Stack maw={720}>
        <TextInput label="Title" value={title} onChange={(e) => setTitle(e.currentTarget.value)} />
        <Textarea
          label="Goal"
          description="What each run works toward"
          autosize
          minRows={3}
          value={goal}
          onChange={(e) => setGoal(e.currentTarget.value)}
        />
        <Select
          label="Agent"
          placeholder="Pick an agent"
          searchable
          data={agents.data ?? []}
          value={agentType}
          onChange={setAgentType}
          error={missingAgent}
        />
        <Radio.Group label="Schedule" value={kind} onChange={(v) => setKind(v as 'cron' | 'manual')}>
          <Group mt="xs">
            <Radio value="cron" label="On a cron schedule" />
            <Radio value="manual" label="Manual (only when started)" />
          </Group>
        </Radio.Group>
        {kind === 'cron' && (
          <>
            <Group align="flex-start" grow wrap="wrap">
              <TextInput
                label="Cron expression"
                description="minute hour day-of-month month day-of-week"
                value={cron}
                onChange={(e) => setCron(e.currentTarget.value)}
                error={preview.ok ? null : preview.message}
                styles={{ input: { fontFamily: 'monospace' } }}
                miw={200}
              />
              <TextInput
                label="Time zone"
                description="IANA name, e.g. Europe/Paris"
                value={timezone}
                onChange={(e) => setTimezone(e.currentTarget.value)}
                miw={200}
              />
            </Group>
            {preview.ok && (
              <div aria-label="Next runs" role="region">
                <Text size="sm" fw={600}>
                  Next 5 runs, in your time zone ({reader})
                </Text>
                <List size="sm" data-testid="next-runs">
                  {preview.runs.map((d) => (
                    <List.Item key={d.toISOString()}>{formatRun(d, reader)}</List.Item>
                  ))}
                </List>
              </div>
            )}
          </>
        )}
        <Select
          label="If the last run is still going"
          data={OVERLAP_OPTIONS}
          value={overlap}
          onChange={(v) => setOverlap((v as Overlap | null) ?? 'allow_all')}
          allowDeselect={false}
        />
        {error && (
          <Alert color="red" role="alert" title="Not created">
            {error}
          </Alert>
        )}
        <Group>
          <Button type="submit" loading={saving}>
            Create mission
          </Button>
        </Group>
      </Stack>
    </form>
  );
}
