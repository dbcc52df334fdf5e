/** Pieces of the execution pages: the status badge, times and tokens as a person reads them. */
import { Badge } from '@mantine/core';

const colors: Record<string, string> = {
  pending: 'gray',
  running: 'blue',
  completed: 'green',
  failed: 'red',
  cancelled: 'orange',
};

export function ExecutionStatus({ status }: { status: string }) {
  return (
    <Badge color={colors[status] ?? 'gray'} variant="light">
      {status}
    </Badge>
  );
}

/** @returns whether an execution may still be cancelled. */
export const isLive = (status: string): boolean => status === 'pending' || status === 'running';

/** @returns a time in the reader's locale and zone, or a dash. */
export const when = (iso: string | null | undefined): string => (iso ? new Date(iso).toLocaleString() : '—');

/** @returns input and output tokens, e.g. "120 in · 45 out". */
export const tokens = (usage: { input_tokens: number; output_tokens: number } | undefined): string =>
  usage ? `${usage.input_tokens} in · ${usage.output_tokens} out` : '—';
