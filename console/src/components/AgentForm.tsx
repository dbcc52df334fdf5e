/**
 * The agent form (new and edit): name, system prompt, model, skills, MCP servers, sub-agents (picked from the
 * organization's own), visibility. The service validates; its message is shown next to the form.
 */
import { Alert, Button, Group, MultiSelect, Select, Stack, TextInput, Textarea } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { useAgentOptions, useMcpServerOptions, useSkillOptions } from '../api/options';

export const VISIBILITIES = [
  { value: 'organization', label: 'Organization: every member' },
  { value: 'private', label: 'Private: only its owner' },
  { value: 'unlisted', label: 'Unlisted: whoever has its link' },
  { value: 'public', label: 'Public' },
];

export interface AgentFields {
  name: string;
  systemPrompt: string;
  model: string;
  visibility: string;
  skillIds: string[];
  mcpServerIds: string[];
  subAgentIds: string[];
}

export const EMPTY_AGENT: AgentFields = {
  name: '',
  systemPrompt: '',
  model: '',
  visibility: 'organization',
  skillIds: [],
  mcpServerIds: [],
  subAgentIds: [],
};

interface Props {
  initial: AgentFields;
  /** The agent being edited (left out of its own sub-agents). */
  agentId?: string;
  submitLabel: string;
  saving: boolean;
  /** The service's answer to the last save, when it refused it. */
  error: string | null;
  saved?: boolean;
  onSubmit: (fields: AgentFields) => void;
}

export function AgentForm({ initial, agentId, submitLabel, saving, error, saved, onSubmit }: Props) {
  const [f, setF] = useState<AgentFields>(initial);
  const agents = useAgentOptions();
  const skills = useSkillOptions();
  const servers = useMcpServerOptions();
  const set = <K extends keyof AgentFields>(key: K, value: AgentFields[K]) =>
    setF((prev) => ({ ...prev, [key]: value }));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onSubmit(f);
  };
  const loadError = agents.error ?? skills.error ?? servers.error;
  return (
    <form onSubmit={submit} aria-label="Agent" noValidate>
      <Stack maw={720}>
        <TextInput label="Name" value={f.name} onChange={(e) => set('name', e.currentTarget.value)} />
        <Textarea
          label="System prompt"
          autosize
          minRows={4}
          maxRows={16}
          value={f.systemPrompt}
          onChange={(e) => set('systemPrompt', e.currentTarget.value)}
        />
        <TextInput
          label="Model"
          description="Leave empty for the service's default model"
          value={f.model}
          onChange={(e) => set('model', e.currentTarget.value)}
        />
        <MultiSelect
          label="Skills"
          placeholder={skills.data?.length === 0 ? 'The organization has no skills' : 'Pick skills'}
          data={skills.data ?? []}
          value={f.skillIds}
          onChange={(v) => set('skillIds', v)}
          searchable
          clearable
        />
        <MultiSelect
          label="MCP servers"
          placeholder={servers.data?.length === 0 ? 'The organization has no MCP servers' : 'Pick MCP servers'}
          data={servers.data ?? []}
          value={f.mcpServerIds}
          onChange={(v) => set('mcpServerIds', v)}
          searchable
          clearable
        />
        <MultiSelect
          label="Sub-agents"
          description="Agents this one may hand tasks to"
          placeholder="Pick agents"
          data={(agents.data ?? []).filter((a) => a.value !== agentId)}
          value={f.subAgentIds}
          onChange={(v) => set('subAgentIds', v)}
          searchable
          clearable
        />
        <Select
          label="Visibility"
          data={VISIBILITIES}
          value={f.visibility}
          onChange={(v) => set('visibility', v ?? 'organization')}
          allowDeselect={false}
        />
        {loadError && (
          <Alert color="orange" role="alert">
            Some choices could not be loaded: {loadError.message}
          </Alert>
        )}
        {error && (
          <Alert color="red" role="alert" title="Not saved">
            {error}
          </Alert>
        )}
        {saved && !error && (
          <Alert color="green" role="status">
            Saved.
          </Alert>
        )}
        <Group>
          <Button type="submit" loading={saving}>
            {submitLabel}
          </Button>
        </Group>
      </Stack>
    </form>
  );
}
