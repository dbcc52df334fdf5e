/**
 * `GET /mcp-app/jobs/{jobId}/events`: a job's event stream for an embedded MCP app, authorized by the signed URL's
 * `token` instead of a bearer token (commands/appStreams.ts). It is the job's event stream (`job:<jobId>`), replayed
 * from `Last-Event-ID` (else from its start), then live, ending with the job's terminal status; any origin may read
 * it (the URL is the credential).
 */
import { verifyJobEventsToken } from '../../commands/appStreams';
import { NotFoundError, UnauthorizedError } from '../../lib/errors';
import type { LoggedEvent } from '../../commands/eventLog';
import { Job, jobStreamId, TERMINAL_JOB_STATUSES, type JobStatus } from '../../models';
import { route, type RouteSpec } from '../route';
import { pathParams } from '../schemas';
import { lastEventIdSchema, requestedLastEventId, streamEvents, streamFullyRead } from '../sse';
import type { ExecutionRouteDeps } from '../deps';

/** A job's stream ends with its terminal status, as GET /api/jobs/{id}/events. */
const isJobTerminal = (e: LoggedEvent): boolean =>
  e.event === 'job.status' && TERMINAL_JOB_STATUSES.includes((e.data as { status: JobStatus }).status);

const params = pathParams('jobId');
const query = {
  type: 'object',
  additionalProperties: false,
  required: ['token'],
  properties: {
    token: { type: 'string', minLength: 1, maxLength: 2000, description: 'The signed URL’s token' },
    lastEventId: lastEventIdSchema,
  },
} as const;

/**
 * @param deps app dependencies.
 * @returns the route declarations.
 */
export function appStreamRoutes(deps: ExecutionRouteDeps): RouteSpec[] {
  return [
    route({
      method: 'get',
      path: '/mcp-app/jobs/:jobId/events',
      summary: 'A job’s event stream for an embedded MCP app, authorized by its signed URL (no bearer token)',
      tags: ['MCP'],
      auth: 'public',
      params,
      query,
      responses: {
        200: { sse: true, description: 'The job’s events: replay after Last-Event-ID, then live' },
        204: streamFullyRead,
      },
      errors: [401, 404],
      handler: async (ctx, { params: { jobId }, query: { token } }) => {
        const verified = await verifyJobEventsToken(deps.config, jobId, token);
        if (verified === 'expired') throw new UnauthorizedError('Signature expired');
        if (verified === 'invalid') throw new UnauthorizedError('Invalid signature');
        // The job of the signature's organization (a job deleted since, or never there, is 404).
        const job = await Job.findOne({ _id: jobId, organizationId: verified.organizationId })
          .select({ status: 1 })
          .lean<{ status: JobStatus }>();
        if (!job) throw new NotFoundError('Job not found');
        ctx.set('Access-Control-Allow-Origin', '*');
        await streamEvents(ctx, {
          streamId: jobStreamId(jobId),
          afterSeq: requestedLastEventId(ctx) ?? 0,
          tailer: deps.events,
          shutdown: deps.shutdown,
          isTerminal: isJobTerminal,
          heartbeatMs: deps.config.sseHeartbeatMs,
          ended: TERMINAL_JOB_STATUSES.includes(job.status),
        });
      },
    }),
  ];
}
