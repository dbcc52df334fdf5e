/**
 * GET /api/events: the organization's activity stream, one connection for every live view of a page (the console's
 * lists): its service events after a cursor, then live (commands/organizationEvents.ts; docs/decisions.md
 * "Organization activity stream").
 */
import {
  organizationFeedOf,
  parseEventCursor,
  SETTLE_MS,
  typeFilter,
  type EventCursor,
  type FeedEvent,
} from '../../commands/organizationEvents';
import { sseConnections } from '../../lib/metrics';
import type { AppContext } from '../context';
import type { AppDeps } from '../deps';
import { route, type RouteSpec } from '../route';
import { openEventStream, SSE_RETRY_MS } from '../sse';
import { organizationEventsQuery, organizationEventsResponse, organizationStreamEvents } from './events.schema';

/**
 * @param deps the process's tailer (its wake-ups), shutdown signal and configuration.
 * @returns the route declarations.
 */
export function organizationEventRoutes(deps: Pick<AppDeps, 'config' | 'events' | 'shutdown' | 'logger'>): RouteSpec[] {
  return [
    route({
      method: 'get',
      path: '/events',
      summary:
        'The organization’s activity stream: its service events (chat, job, task, mission, execution, repository) after Last-Event-ID, then live',
      tags: ['Events'],
      auth: 'service',
      scope: 'webhooks:read',
      query: organizationEventsQuery,
      responses: { 200: organizationEventsResponse },
      events: organizationStreamEvents,
      handler: (ctx, { query }) => {
        const header = ctx.get('last-event-id');
        const given = header !== '' ? header : query.lastEventId;
        // No position: only what happens from now on (events not yet settled count as new).
        const position = given !== undefined ? parseEventCursor(given) : { at: Date.now() - SETTLE_MS, id: '' };
        openStream(ctx, deps, position, typeFilter(query.types));
      },
    }),
  ];
}

function openStream(
  ctx: AppContext,
  deps: Pick<AppDeps, 'config' | 'events' | 'shutdown' | 'logger'>,
  position: EventCursor,
  wanted: (type: string) => boolean
): void {
  const body = openEventStream(ctx);
  sseConnections.inc();
  let closed = false;
  const heartbeat = setInterval(() => body.write(': heartbeat\n\n'), deps.config.sseHeartbeatMs);
  const feed = organizationFeedOf(deps.events, deps.config.eventPollMs, (err) =>
    deps.logger.warn({ err }, 'organization events read failed')
  );
  const send = ({ cursor, event }: FeedEvent): void => {
    if (closed || !wanted(event.type)) return;
    body.write(`id: ${cursor}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
  };
  body.write(`: connected\nretry: ${SSE_RETRY_MS}\n\n`);
  const unsubscribe = feed.subscribe(ctx.state.auth.organizationId, position, send);
  const close = (): void => {
    if (closed) return;
    closed = true;
    sseConnections.dec();
    clearInterval(heartbeat);
    unsubscribe();
    deps.shutdown.removeEventListener('abort', close);
    body.end();
  };
  ctx.res.once('close', close);
  deps.shutdown.addEventListener('abort', close);
}
