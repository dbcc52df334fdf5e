/** The state of a page's live stream (lib/eventSource.ts): Live, Reconnecting… (EventSource retrying), … */
import { Badge } from '@mantine/core';
import type { Connection } from '../lib/eventSource';

const connectionLabel: Record<Connection, { label: string; color: string }> = {
  connecting: { label: 'Connecting…', color: 'gray' },
  live: { label: 'Live', color: 'green' },
  reconnecting: { label: 'Reconnecting…', color: 'orange' },
  closed: { label: 'Disconnected', color: 'red' },
};

export function ConnectionBadge({ connection, closedLabel }: { connection: Connection; closedLabel?: string }) {
  const conn = connectionLabel[connection];
  return (
    <Badge
      color={connection === 'closed' && closedLabel ? 'gray' : conn.color}
      variant="dot"
      role="status"
      aria-live="polite"
    >
      {connection === 'closed' && closedLabel ? closedLabel : conn.label}
    </Badge>
  );
}
