/** A chat's status, as a word and a colour (the word carries the meaning). */
import { Badge } from '@mantine/core';

const colors: Record<string, string> = {
  standby: 'gray',
  working: 'blue',
  done: 'green',
  needs_attention: 'orange',
  error: 'red',
};

export function StatusBadge({ status }: { status: string }) {
  return (
    <Badge color={colors[status] ?? 'gray'} variant="light">
      {status.replace('_', ' ')}
    </Badge>
  );
}
