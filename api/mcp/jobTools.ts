/**
 * The MCP endpoint's job tools and the job transcripts as resources (commands/jobs.ts, the same functions as the
 * /api/jobs routes), and the tool that issues a job's signed app-stream URL (commands/appStreams.ts).
 */
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { signJobEventsUrl, APP_STREAM_URL_SECONDS } from '../../commands/appStreams';
import { actOnJob, findJob, jobTranscript, listJobs } from '../../commands/jobs';
import type { AuthContext } from '../../commands/tokens';
import { pageQueryProperties } from '../../lib/pagination';
import { JOB_STATUSES } from '../../models';
import { presentJob } from '../../presenters/job';
import type { JobAction } from '../../workflows/jobStates';
import { requiredStr, str } from '../schemas';
import { tool, toolInput, type McpTool, type ToolContext } from './tool';

const jobId = requiredStr(100, { description: 'A job id (job_…)' });
const text = (description: string) => requiredStr(100_000, { description });

/** Acts on a job (as POST /api/jobs/{id}/<verb>) and answers it. */
async function act(ctx: ToolContext, id: string, verb: JobAction, input: string | undefined) {
  return { job: presentJob(await actOnJob(ctx.deps, ctx.auth, id, verb, input)) };
}

/** @returns the job tools. */
export function jobTools(): McpTool[] {
  return [
    tool({
      name: 'list_jobs',

      scope: 'jobs:read',
      title: 'List jobs',
      description: 'The organization’s jobs, newest first (as GET /api/jobs).',
      inputSchema: toolInput({
        ...pageQueryProperties,
        status: { type: 'string', enum: [...JOB_STATUSES] },
        agent_id: str(100),
        mission_id: str(100),
      }),
      annotations: { readOnlyHint: true },
      call: async (args, ctx) => {
        const { items, nextCursor } = await listJobs(
          ctx.auth,
          { status: args.status, agentId: args.agent_id, missionId: args.mission_id },
          { limit: args.limit, cursor: args.cursor }
        );
        return { jobs: items.map(presentJob), next_cursor: nextCursor };
      },
    }),
    tool({
      name: 'get_job',

      scope: 'jobs:read',
      title: 'Get a job',
      description: 'A job: status, review state, iterations, artifacts, links (as GET /api/jobs/{id}).',
      inputSchema: toolInput({ job_id: jobId }, ['job_id']),
      annotations: { readOnlyHint: true },
      call: async (args, ctx) => ({ job: presentJob(await findJob(ctx.auth, args.job_id)) }),
    }),
    tool({
      name: 'approve_job',

      scope: 'jobs:write',
      title: 'Approve a job',
      description: 'Approve reviewable work; with `next_step`, another iteration runs.',
      inputSchema: toolInput({ job_id: jobId, next_step: text('The next step') }, ['job_id']),
      annotations: { destructiveHint: false },
      call: async (args, ctx) => act(ctx, args.job_id, 'approve', args.next_step),
    }),
    tool({
      name: 'iterate_job',

      scope: 'jobs:write',
      title: 'Request another iteration',
      description: 'Send the reviewer’s feedback: the next iteration’s input.',
      inputSchema: toolInput({ job_id: jobId, feedback: text('The feedback') }, ['job_id', 'feedback']),
      annotations: { destructiveHint: false },
      call: async (args, ctx) => act(ctx, args.job_id, 'iterate', args.feedback),
    }),
    tool({
      name: 'resume_job',

      scope: 'jobs:write',
      title: 'Resume a blocked job',
      description: 'Give the input the agent asked for.',
      inputSchema: toolInput({ job_id: jobId, input: text('The input') }, ['job_id', 'input']),
      annotations: { destructiveHint: false },
      call: async (args, ctx) => act(ctx, args.job_id, 'resume', args.input),
    }),
    tool({
      name: 'cancel_job',

      scope: 'jobs:write',
      title: 'Cancel a job',
      description: 'Cancel running work.',
      inputSchema: toolInput({ job_id: jobId }, ['job_id']),
      annotations: { destructiveHint: true },
      call: async (args, ctx) => act(ctx, args.job_id, 'cancel', undefined),
    }),
    tool({
      name: 'job_events_url',

      scope: 'jobs:read',
      title: 'Signed URL of a job’s event stream',
      description:
        'A URL that streams the job’s events to an embedded app without a bearer token (expires; only this job).',
      inputSchema: toolInput(
        {
          job_id: jobId,
          expires_in_seconds: { type: 'integer', minimum: 60, maximum: APP_STREAM_URL_SECONDS.max },
        },
        ['job_id']
      ),
      annotations: { readOnlyHint: true },
      call: async (args, ctx) => {
        const job = await findJob(ctx.auth, args.job_id);
        const { url, expiresAt } = await signJobEventsUrl(ctx.deps.config, {
          organizationId: job.organizationId,
          jobId: job._id,
          expiresInSeconds: args.expires_in_seconds,
        });
        return { url, expires_at: expiresAt.toISOString() };
      },
    }),
  ];
}

/** The URI template of a job's transcript resource. */
export const JOB_TRANSCRIPT_TEMPLATE = 'job://{job_id}/transcript';
const TRANSCRIPT_URI = /^job:\/\/([A-Za-z0-9_-]{1,100})\/transcript$/;

/**
 * @param auth the caller.
 * @returns the organization's most recent jobs' transcripts as resources.
 */
export async function listTranscriptResources(auth: AuthContext): Promise<Array<Record<string, string>>> {
  const { items } = await listJobs(auth, {}, { limit: 50 });
  return items.map((job) => ({
    uri: `job://${job._id}/transcript`,
    name: `Transcript of ${job.title}`,
    mimeType: 'application/json',
  }));
}

/**
 * @param auth the caller.
 * @param uri a transcript resource URI.
 * @returns its contents: the job's transcript events (every iteration, in order).
 */
export async function readTranscriptResource(
  auth: AuthContext,
  uri: string
): Promise<Array<{ uri: string; mimeType: string; text: string }>> {
  const m = TRANSCRIPT_URI.exec(uri);
  if (!m) throw new McpError(ErrorCode.InvalidParams, `Unknown resource: ${uri}`);
  const events: unknown[] = [];
  let cursor: string | undefined;
  let jobIdOut = m[1];
  for (let pages = 0; pages < 20; pages++) {
    const page = await jobTranscript(auth, m[1], { limit: 1000, cursor });
    jobIdOut = page.job._id;
    events.push(...page.events);
    if (!page.next) break;
    cursor = page.next;
  }
  return [{ uri, mimeType: 'application/json', text: JSON.stringify({ job_id: jobIdOut, events }) }];
}
