/**
 * Usage: tokens, executions and cost per period and per agent over a chosen range (GET
 * /api/usage/organization/{orgId}), as two stacked bar charts (recharts: imported by this lazily loaded page only), a
 * table of the same numbers (the charts' text alternative) and one of the cost per model; then the organization's
 * budgets (components/BudgetsSection.tsx). The shaping is lib/usageSeries.ts.
 */
import { Alert, Button, Group, Loader, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { api, unwrap } from '../api/client';
import { useSession } from '../api/useSession';
import { BudgetsSection } from '../components/BudgetsSection';
import {
  formatUsd,
  lastDays,
  rangeProblem,
  usageSeries,
  usageTable,
  type SeriesAgent,
  type SeriesRow,
  type UsageAnswer,
} from '../lib/usageSeries';

type Period = 'daily' | 'weekly' | 'monthly';
const PERIODS: { value: Period; label: string }[] = [
  { value: 'daily', label: 'Per day' },
  { value: 'weekly', label: 'Per week (from Monday)' },
  { value: 'monthly', label: 'Per month' },
];
const COLORS = ['#4c6ef5', '#e8590c', '#2f9e44', '#ae3ec9', '#0c8599', '#e03131', '#f08c00', '#495057'];

function UsageChart(props: { id: string; title: string; agents: SeriesAgent[]; rows: SeriesRow[] }) {
  const { id, title, agents, rows } = props;
  return (
    <figure aria-labelledby={`${id}-caption`} style={{ margin: 0 }} data-testid={id}>
      <Text component="figcaption" id={`${id}-caption`} fw={600}>
        {title}
      </Text>
      <div style={{ width: '100%', height: 260 }}>
        <ResponsiveContainer width="100%" height="100%">
          <BarChart data={rows} margin={{ top: 8, right: 8, bottom: 8, left: 0 }}>
            <CartesianGrid strokeDasharray="3 3" />
            <XAxis dataKey="period" fontSize={12} />
            <YAxis allowDecimals={false} fontSize={12} width={56} />
            <Tooltip />
            <Legend />
            {agents.map((a, i) => (
              <Bar key={a.key} dataKey={a.key} name={a.name} stackId="agents" fill={COLORS[i % COLORS.length]} />
            ))}
          </BarChart>
        </ResponsiveContainer>
      </div>
    </figure>
  );
}

export function UsagePage() {
  const session = useSession().data;
  const orgId = session?.organization.id ?? '';
  const [form, setForm] = useState(() => ({ period: 'daily' as Period, ...lastDays(Date.now(), 30) }));
  const [asked, setAsked] = useState(form);
  const problem = rangeProblem(form.start, form.end);

  const usage = useQuery({
    queryKey: ['usage', orgId, asked],
    enabled: orgId !== '',
    queryFn: async () =>
      unwrap(
        await api.GET('/api/usage/organization/{orgId}', {
          params: { path: { orgId }, query: { period: asked.period, start: asked.start, end: asked.end } },
        })
      ) as UsageAnswer,
  });
  const agents = useQuery({
    queryKey: ['agents'],
    queryFn: async () => unwrap(await api.GET('/api/agents', { params: { query: { limit: 100 } } })),
  });
  const names = new Map((agents.data?.agents ?? []).map((a) => [a.id, a.name]));
  const tokens = usage.data ? usageSeries(usage.data, names, 'tokens') : null;
  const runs = usage.data ? usageSeries(usage.data, names, 'executions') : null;
  const table = usage.data ? usageTable(usage.data, names) : [];

  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!problem) setAsked(form);
  };

  return (
    <Stack>
      <Title order={1}>Usage</Title>
      <form onSubmit={submit} aria-label="Period">
        <Group align="flex-end" wrap="wrap">
          <Select
            label="Per"
            data={PERIODS}
            value={form.period}
            allowDeselect={false}
            onChange={(v) => setForm({ ...form, period: (v ?? 'daily') as Period })}
            w={220}
          />
          <TextInput
            label="First day"
            type="date"
            value={form.start}
            onChange={(e) => setForm({ ...form, start: e.currentTarget.value })}
          />
          <TextInput
            label="Last day"
            type="date"
            value={form.end}
            onChange={(e) => setForm({ ...form, end: e.currentTarget.value })}
          />
          <Button type="submit" disabled={problem !== null}>
            Show
          </Button>
        </Group>
        {problem && (
          <Text c="red" size="sm" mt="xs" role="alert">
            {problem}
          </Text>
        )}
      </form>
      <Text size="sm" c="dimmed">
        Days are UTC days. An execution counts on the day it started; a sub-agent’s tokens count as its own agent’s.
      </Text>
      {(usage.isPending || !orgId) && <Loader aria-label="Loading usage" />}
      {usage.isError && (
        <Alert color="red" role="alert">
          {usage.error.message}
        </Alert>
      )}
      {usage.data && (
        <>
          <Group gap="xl" wrap="wrap" aria-label="Totals" role="group">
            <Text>
              Executions: <b data-testid="total-executions">{usage.data.totals.executions}</b>
            </Text>
            <Text>
              Input tokens: <b data-testid="total-input">{usage.data.totals.input_tokens}</b>
            </Text>
            <Text>
              Output tokens: <b data-testid="total-output">{usage.data.totals.output_tokens}</b>
            </Text>
            <Text>
              Cost: <b data-testid="total-cost">{formatUsd(usage.data.totals.cost_usd)}</b>
            </Text>
          </Group>
          {table.length === 0 ? (
            <Text>No executions in this period.</Text>
          ) : (
            <>
              <UsageChart id="tokens-chart" title="Tokens (input + output) per agent" {...tokens!} />
              <UsageChart id="executions-chart" title="Executions per agent" {...runs!} />
              <Table.ScrollContainer minWidth={320}>
                <Table striped aria-label="Usage per period and agent">
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>Period</Table.Th>
                      <Table.Th>Agent</Table.Th>
                      <Table.Th>Executions</Table.Th>
                      <Table.Th>Input tokens</Table.Th>
                      <Table.Th>Output tokens</Table.Th>
                      <Table.Th>Cost</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {table.map((r) => (
                      <Table.Tr key={`${r.period} ${r.agentId}`}>
                        <Table.Td>{r.period}</Table.Td>
                        <Table.Td>{r.agentName}</Table.Td>
                        <Table.Td>{r.executions}</Table.Td>
                        <Table.Td>{r.inputTokens}</Table.Td>
                        <Table.Td>{r.outputTokens}</Table.Td>
                        <Table.Td>{formatUsd(r.costUsd)}</Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              </Table.ScrollContainer>
              <Table.ScrollContainer minWidth={320}>
                <Table striped aria-label="Cost per model">
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>Model</Table.Th>
                      <Table.Th>Calls</Table.Th>
                      <Table.Th>Input tokens</Table.Th>
                      <Table.Th>Output tokens</Table.Th>
                      <Table.Th>Cost</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {usage.data.models.map((m) => (
                      <Table.Tr key={m.model}>
                        <Table.Td>{m.model}</Table.Td>
                        <Table.Td>{m.calls}</Table.Td>
                        <Table.Td>{m.input_tokens}</Table.Td>
                        <Table.Td>{m.output_tokens}</Table.Td>
                        <Table.Td>{formatUsd(m.cost_usd)}</Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              </Table.ScrollContainer>
              <Text size="sm" c="dimmed">
                Cost comes from the price table of each model; a model without a price counts its tokens and no cost.
              </Text>
            </>
          )}
        </>
      )}
      <BudgetsSection agents={(agents.data?.agents ?? []).map((a) => ({ id: a.id, name: a.name }))} />
    </Stack>
  );
}
