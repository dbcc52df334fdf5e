/**
 * /api/jobs: long-running work by an agent with a human review loop (commands/jobs.ts, workflows/job.ts), and the
 * job's event stream (`job:<jobId>` in the durable event log, written by the job workflow's activities).
 */
import { actOnJob, actOnJobs, createJob, findJob, jobLineage, jobTranscript, listJobs } from '../../commands/jobs';
import { jobReruns } from '../../commands/jobReruns';
import { decideJob, listInbox, reviewSpecOf } from '../../commands/jobReviews';
import { StateConflictError, ValidationError } from '../../lib/errors';
import { translateError } from '../middlewares/errors';
import { jobStreamId, TERMINAL_JOB_STATUSES, type JobStatus } from '../../models';
import { presentJob, presentJobRef, presentRerunOf } from '../../presenters/job';
import type { JobAction } from '../../workflows/jobStates';
import { route, type RouteSpec } from '../route';
import { idParams } from '../schemas';
import { streamFullyRead, streamQuery, streamRecentEvents } from '../sse';
import type { ExecutionRouteDeps } from '../deps';
import { jobRerunRoutes } from './jobReruns';
import {
  ACTION_TEXT_FIELDS,
  type actionBody,
  approveBody,
  cancelBody,
  decisionBody,
  inboxQuery,
  iterateBody,
  JOB_REPLAY_EVENTS,
  jobCreateBody,
  jobDecisionsBody,
  jobDecisionsResponse,
  jobEventsResponse,
  jobLineageResponse,
  jobListQuery,
  jobListResponse,
  jobResponse,
  jobStreamEvents,
  resumeBody,
  transcriptQuery,
  transcriptResponse,
} from './jobs.schema';

const tags = ['Jobs'];
/** The built-in actions a decision may name, and the payload field that is their text. */
const BUILTIN_TEXT_FIELDS = { approve: 'next_step', iterate: 'feedback', resume: 'input' } as const;

/**
 * @param deps app dependencies.
 * @returns the route declarations.
 */
export function jobRoutes(deps: ExecutionRouteDeps): RouteSpec[] {
  const action = (
    name: JobAction,
    bodySchema: ReturnType<typeof actionBody>,
    field: string | null,
    summary: string
  ): RouteSpec =>
    route({
      method: 'post',
      path: `/jobs/:id/${name}`,
      summary,
      tags,
      auth: 'service',
      scope: 'jobs:write',
      params: idParams,
      body: bodySchema,
      responses: { 200: jobResponse },
      errors: [409],
      handler: async (ctx, { params, body }) => {
        const text = field ? body[field] : undefined;
        ctx.body = { job: presentJob(await actOnJob(deps, ctx.state.auth, params.id, name, text)) };
      },
    });
  const decisions = route({
    method: 'post',
    path: '/jobs/decisions',
    summary:
      'One decision (approve, iterate, resume, cancel) on up to 100 jobs, each taken independently and answered per job (partial success is normal)',
    tags,
    auth: 'service',
    scope: 'jobs:write',
    body: jobDecisionsBody,
    responses: { 200: jobDecisionsResponse },
    handler: async (ctx, { body }) => {
      const field = ACTION_TEXT_FIELDS[body.action];
      for (const other of Object.values(ACTION_TEXT_FIELDS))
        if (other && other !== field && body[other] !== undefined)
          throw new ValidationError(`${other} does not go with action ${body.action}`);
      const text = field ? body[field] : undefined;
      if ((body.action === 'iterate' || body.action === 'resume') && text === undefined)
        throw new ValidationError(`${field} is required for action ${body.action}`);
      const settled = await actOnJobs(deps, ctx.state.auth, body.job_ids, body.action, text);
      ctx.body = {
        results: settled.map((r, i) => {
          if (r.status === 'fulfilled') return { job_id: body.job_ids[i], ok: true, job: presentJob(r.value) };
          const known = translateError(r.reason, 0);
          if (!known || known.status >= 500)
            ctx.state.log.warn({ err: r.reason, jobId: body.job_ids[i] }, 'job decision failed');
          const error = known
            ? { code: known.code, message: known.message, status: known.status }
            : { code: 'internal_error', message: 'The decision could not be taken', status: 500 };
          return {
            job_id: body.job_ids[i],
            ok: false,
            error: known instanceof StateConflictError ? { ...error, current_state: known.currentState } : error,
          };
        }),
      };
    },
  });
  return [
    decisions,
    route({
      method: 'get',
      path: '/jobs/inbox',
      summary:
        'The review inbox: jobs awaiting review with their deadlines, oldest deadline first (none last); filter: assignee',
      tags,
      auth: 'service',
      scope: 'jobs:read',
      query: inboxQuery,
      responses: { 200: jobListResponse },
      handler: async (ctx, { query: q }) => {
        const { items, nextCursor } = await listInbox(
          ctx.state.auth,
          { assignee: q.assignee },
          { limit: q.limit, cursor: q.cursor }
        );
        ctx.body = { jobs: items.map(presentJob), next_cursor: nextCursor };
      },
    }),
    route({
      method: 'get',
      path: '/jobs',
      summary: 'List the organization’s jobs, newest first (filters: status, mission_id, agent_id, chat_id)',
      tags,
      auth: 'service',
      scope: 'jobs:read',
      query: jobListQuery,
      responses: { 200: jobListResponse },
      handler: async (ctx, { query: q }) => {
        const { items, nextCursor } = await listJobs(
          ctx.state.auth,
          { status: q.status, missionId: q.mission_id, agentId: q.agent_id, chatId: q.chat_id },
          { limit: q.limit, cursor: q.cursor }
        );
        ctx.body = { jobs: items.map(presentJob), next_cursor: nextCursor };
      },
    }),
    route({
      method: 'post',
      path: '/jobs',
      summary: 'Start a job: an agent works toward a goal in a workspace, in iterations a human reviews',
      tags,
      auth: 'service',
      scope: 'jobs:write',
      body: jobCreateBody,
      responses: { 201: jobResponse },
      handler: async (ctx, { body }) => {
        const job = await createJob(deps, ctx.state.auth, {
          agentId: body.agent_id,
          workspaceId: body.workspace_id,
          goal: body.goal,
          title: body.title,
          parentJobId: body.parent_job_id,
          metadata: body.metadata,
          review: body.review ? reviewSpecOf(body.review) : undefined,
        });
        ctx.status = 201;
        ctx.body = { job: presentJob(job) };
      },
    }),
    route({
      method: 'get',
      path: '/jobs/:id',
      summary: 'A job: status, metadata, artifacts, review state, links (chat, mission, task, parent, executions)',
      tags,
      auth: 'service',
      scope: 'jobs:read',
      params: idParams,
      responses: { 200: jobResponse },
      handler: async (ctx, { params }) => {
        ctx.body = { job: presentJob(await findJob(ctx.state.auth, params.id)) };
      },
    }),
    route({
      method: 'get',
      path: '/jobs/:id/events',
      summary: 'The job’s event stream: replay after Last-Event-ID (else the last 100 events), then live',
      tags,
      auth: 'service',
      scope: 'jobs:read',
      params: idParams,
      query: streamQuery,
      responses: { 200: jobEventsResponse, 204: streamFullyRead },
      events: jobStreamEvents,
      handler: async (ctx, { params }) => {
        const job = await findJob(ctx.state.auth, params.id);
        await streamRecentEvents(ctx, deps, {
          streamId: jobStreamId(job._id),
          replay: JOB_REPLAY_EVENTS,
          isTerminal: (e) =>
            e.event === 'job.status' && TERMINAL_JOB_STATUSES.includes((e.data as { status: JobStatus }).status),
          ended: TERMINAL_JOB_STATUSES.includes(job.status as JobStatus),
        });
      },
    }),
    route({
      method: 'get',
      path: '/jobs/:id/lineage',
      summary:
        'Related work: the parent job, child jobs, iterations (executions), the mission run that created it, reruns',
      tags,
      auth: 'service',
      scope: 'jobs:read',
      params: idParams,
      responses: { 200: jobLineageResponse },
      handler: async (ctx, { params }) => {
        const { job, parent, children } = await jobLineage(ctx.state.auth, params.id);
        const reruns = await jobReruns(ctx.state.auth, job);
        const iterations = [...job.iterations].sort((a, b) => a.n - b.n);
        ctx.body = {
          job: presentJobRef(job),
          parent: parent ? presentJobRef(parent) : null,
          children: children.map(presentJobRef),
          iterations: iterations.map((i, k) => ({
            n: i.n,
            execution_id: i.executionId,
            parent_execution_id: k > 0 ? iterations[k - 1].executionId : null,
            reason: i.reason,
            status: i.status,
          })),
          mission_run: job.missionId ? { mission_id: job.missionId, run_id: job.missionRunId ?? null } : null,
          task_id: job.taskId ?? null,
          rerun_of: presentRerunOf(job),
          reruns: reruns.map(presentJobRef),
        };
      },
    }),
    route({
      method: 'get',
      path: '/jobs/:id/transcript-events',
      summary: 'The transcript of every iteration (each execution’s events), in order, one page at a time',
      tags,
      auth: 'service',
      scope: 'jobs:read',
      params: idParams,
      query: transcriptQuery,
      responses: { 200: transcriptResponse },
      handler: async (ctx, { params, query }) => {
        const { limit, cursor } = query;
        const page = await jobTranscript(ctx.state.auth, params.id, { limit, cursor });
        ctx.body = {
          job_id: page.job._id,
          events: page.events.map((e) => ({
            iteration: e.iteration,
            execution_id: e.executionId,
            seq: e.seq,
            event: e.event,
            data: e.data,
          })),
          next_cursor: page.next,
        };
      },
    }),
    ...jobRerunRoutes(deps),
    action(
      'approve',
      approveBody,
      'next_step',
      'Approve the work under review: completed, or on to another iteration with `next_step` (409 in other states)'
    ),
    action('cancel', cancelBody, null, 'Cancel the job in any unfinished state, aborting its running iteration'),
    action('resume', resumeBody, 'input', 'Resume a blocked job with the input its agent asked for (409 otherwise)'),
    action(
      'iterate',
      iterateBody,
      'feedback',
      'Request another iteration with the reviewer’s feedback (409 otherwise)'
    ),
    route({
      method: 'post',
      path: '/jobs/:id/decision',
      summary:
        'Take one of the actions the review declares (or approve, iterate, resume) with its payload, validated against the action’s schema',
      tags,
      auth: 'service',
      scope: 'jobs:write',
      params: idParams,
      body: decisionBody,
      responses: { 200: jobResponse },
      errors: [409],
      handler: async (ctx, { params, body }) => {
        const payload = (body.payload ?? {}) as Record<string, unknown>;
        const builtin = BUILTIN_TEXT_FIELDS[body.action as keyof typeof BUILTIN_TEXT_FIELDS];
        const job = builtin
          ? await actOnJob(
              deps,
              ctx.state.auth,
              params.id,
              body.action as JobAction,
              typeof payload[builtin] === 'string' ? (payload[builtin] as string) : undefined,
              payload
            )
          : await decideJob(deps, ctx.state.auth, params.id, body.action, payload);
        ctx.body = { job: presentJob(job) };
      },
    }),
  ];
}
