/**
 * Usage › Budgets (GET/POST/PATCH/DELETE /api/budgets, docs/spend.md): each cap with what it covers, its period, its
 * limit, what it counted in the current period and its state; a form to add one (the organization, an agent or a
 * mission; per day, month or run; in tokens or US dollars); the limit changed in place (raising it resumes the work
 * it paused); delete after an in-page confirmation. A caller without `budgets:write` sees the service's refusal.
 */
import {
  Alert,
  Badge,
  Button,
  Group,
  Loader,
  Progress,
  Select,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';
import {
  budgetCovers,
  budgetState,
  formatAmount,
  limitProblem,
  PERIOD_CHOICES,
  SCOPE_CHOICES,
  UNIT_CHOICES,
  type BudgetPeriod,
  type BudgetScope,
  type BudgetUnit,
  type BudgetView,
} from '../lib/budgets';

const emptyForm = {
  name: '',
  scope: 'organization' as BudgetScope,
  target: '',
  period: 'day' as BudgetPeriod,
  unit: 'usd' as BudgetUnit,
  limit: '',
};

function BudgetRow(props: { b: BudgetView; names: ReadonlyMap<string, string> }) {
  const { b, names } = props;
  const queryClient = useQueryClient();
  const [editing, setEditing] = useState<string | null>(null);
  const [confirming, setConfirming] = useState(false);
  const refresh = () => void queryClient.invalidateQueries({ queryKey: ['budgets'] });
  const patch = useMutation({
    mutationFn: async (limit: number) =>
      unwrap(await api.PATCH('/api/budgets/{id}', { params: { path: { id: b.id } }, body: { limit } })),
    onSuccess: () => {
      setEditing(null);
      refresh();
    },
  });
  const remove = useMutation({
    mutationFn: async () => unwrap(await api.DELETE('/api/budgets/{id}', { params: { path: { id: b.id } } })),
    onSuccess: refresh,
  });
  const state = budgetState(b);
  const label = b.name || budgetCovers(b, names);
  const problem = editing === null ? null : limitProblem(editing);
  return (
    <Table.Tr>
      <Table.Td>
        <Text fw={600}>{label}</Text>
        <Text size="xs" c="dimmed">
          {budgetCovers(b, names)} · {PERIOD_CHOICES.find((p) => p.value === b.period)?.label}
        </Text>
      </Table.Td>
      <Table.Td>
        {editing === null ? (
          formatAmount(b.limit, b.unit)
        ) : (
          <form
            aria-label={`New limit of ${label}`}
            onSubmit={(e) => {
              e.preventDefault();
              if (!problem) patch.mutate(Number(editing));
            }}
          >
            <Group gap="xs" wrap="nowrap">
              <TextInput
                aria-label="New limit"
                value={editing}
                onChange={(e) => setEditing(e.currentTarget.value)}
                error={problem}
                w={120}
              />
              <Button type="submit" size="compact-sm" loading={patch.isPending} disabled={problem !== null}>
                Save
              </Button>
            </Group>
          </form>
        )}
        {patch.isError && (
          <Text c="red" size="sm" role="alert">
            {patch.error.message}
          </Text>
        )}
      </Table.Td>
      <Table.Td>
        {b.spent === null ? (
          <Text size="sm">Counted per run</Text>
        ) : (
          <Stack gap={4}>
            <Text size="sm">
              {formatAmount(b.spent, b.unit)} ({b.percent ?? 0} %)
            </Text>
            <Progress
              value={Math.min(100, b.percent ?? 0)}
              color={state.color}
              aria-label={`${label}: ${b.percent ?? 0} % spent`}
            />
          </Stack>
        )}
      </Table.Td>
      <Table.Td>
        <Badge color={state.color} variant="light">
          {state.label}
        </Badge>
      </Table.Td>
      <Table.Td>
        {confirming ? (
          <Group gap="xs" wrap="nowrap">
            <Button size="compact-sm" color="red" loading={remove.isPending} onClick={() => remove.mutate()}>
              Delete {label}
            </Button>
            <Button size="compact-sm" variant="default" onClick={() => setConfirming(false)}>
              Keep
            </Button>
          </Group>
        ) : (
          <Group gap="xs" wrap="nowrap">
            <Button
              size="compact-sm"
              variant="light"
              aria-label={`Change the limit of ${label}`}
              onClick={() => setEditing(editing === null ? String(b.limit) : null)}
            >
              {editing === null ? 'Change limit' : 'Cancel'}
            </Button>
            <Button
              size="compact-sm"
              variant="subtle"
              color="red"
              aria-label={`Delete ${label}`}
              onClick={() => setConfirming(true)}
            >
              Delete
            </Button>
          </Group>
        )}
        {remove.isError && (
          <Text c="red" size="sm" role="alert">
            {remove.error.message}
          </Text>
        )}
      </Table.Td>
    </Table.Tr>
  );
}

export function BudgetsSection(props: { agents: { id: string; name: string }[] }) {
  const queryClient = useQueryClient();
  const [form, setForm] = useState(emptyForm);
  const budgets = useQuery({
    queryKey: ['budgets'],
    queryFn: async () => unwrap(await api.GET('/api/budgets')),
  });
  const missions = useQuery({
    queryKey: ['missions', 'budget-targets'],
    enabled: form.scope === 'mission',
    queryFn: async () => unwrap(await api.GET('/api/missions', { params: { query: { limit: 100 } } })),
  });
  const create = useMutation({
    mutationFn: async () =>
      unwrap(
        await api.POST('/api/budgets', {
          body: {
            ...(form.name.trim() ? { name: form.name.trim() } : {}),
            scope: form.scope,
            ...(form.scope === 'organization' ? {} : { target_id: form.target }),
            period: form.period,
            unit: form.unit,
            limit: Number(form.limit),
          },
        })
      ),
    onSuccess: () => {
      setForm(emptyForm);
      void queryClient.invalidateQueries({ queryKey: ['budgets'] });
    },
  });
  const missionList = (missions.data?.missions ?? []).map((m) => ({ id: m.id, name: m.title }));
  const names = new Map([...props.agents, ...missionList].map((t) => [t.id, t.name]));
  const targets = (form.scope === 'agent' ? props.agents : missionList).map((t) => ({ value: t.id, label: t.name }));
  const problem = form.limit === '' ? null : limitProblem(form.limit);
  const ready = form.limit !== '' && problem === null && (form.scope === 'organization' || form.target !== '');
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (ready) create.mutate();
  };
  const rows = (budgets.data?.budgets ?? []) as BudgetView[];

  return (
    <Stack component="section" aria-labelledby="budgets-heading">
      <Title order={2} id="budgets-heading">
        Budgets
      </Title>
      <Text size="sm" c="dimmed">
        At 80 % of a budget a threshold event goes out; at its limit new executions are refused and running work stops
        at its next model call (jobs and mission runs wait for attention). Raising the limit resumes them.
      </Text>
      <form onSubmit={submit} aria-label="New budget">
        <Group align="flex-start" wrap="wrap">
          <TextInput
            label="Name (optional)"
            value={form.name}
            maxLength={200}
            onChange={(e) => setForm({ ...form, name: e.currentTarget.value })}
          />
          <Select
            label="Covers"
            data={SCOPE_CHOICES}
            value={form.scope}
            allowDeselect={false}
            onChange={(v) => setForm({ ...form, scope: (v ?? 'organization') as BudgetScope, target: '' })}
            w={200}
          />
          {form.scope !== 'organization' && (
            <Select
              label={form.scope === 'agent' ? 'Agent' : 'Mission'}
              data={targets}
              value={form.target || null}
              searchable
              onChange={(v) => setForm({ ...form, target: v ?? '' })}
              w={200}
            />
          )}
          <Select
            label="Period"
            data={PERIOD_CHOICES}
            value={form.period}
            allowDeselect={false}
            onChange={(v) => setForm({ ...form, period: (v ?? 'day') as BudgetPeriod })}
            w={170}
          />
          <Select
            label="Unit"
            data={UNIT_CHOICES}
            value={form.unit}
            allowDeselect={false}
            onChange={(v) => setForm({ ...form, unit: (v ?? 'usd') as BudgetUnit })}
            w={140}
          />
          <TextInput
            label="Limit"
            inputMode="decimal"
            value={form.limit}
            error={problem}
            onChange={(e) => setForm({ ...form, limit: e.currentTarget.value })}
            w={140}
          />
          <Button type="submit" mt={24} loading={create.isPending} disabled={!ready}>
            Add budget
          </Button>
        </Group>
      </form>
      {create.isError && (
        <Alert color="red" role="alert">
          {create.error.message}
        </Alert>
      )}
      {budgets.isPending && <Loader aria-label="Loading budgets" />}
      {budgets.isError && (
        <Alert color="red" role="alert">
          {budgets.error.message}
        </Alert>
      )}
      {budgets.isSuccess && rows.length === 0 && <Text>No budgets: spend is not capped.</Text>}
      {rows.length > 0 && (
        <Table.ScrollContainer minWidth={320}>
          <Table striped aria-label="Budgets">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Budget</Table.Th>
                <Table.Th>Limit</Table.Th>
                <Table.Th>Spent this period</Table.Th>
                <Table.Th>State</Table.Th>
                <Table.Th>Action</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((b) => (
                <BudgetRow key={b.id} b={b} names={names} />
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
    </Stack>
  );
}
