/**
 * A job's steps and its rerun from one of them (commands/jobReruns.ts; docs/reruns.md), declared among /api/jobs's
 * routes after its transcript.
 */
import { jobSteps, rerunJob } from '../../commands/jobReruns';
import { presentJob } from '../../presenters/job';
import type { ExecutionRouteDeps } from '../deps';
import { route, type RouteSpec } from '../route';
import { idParams } from '../schemas';
import { jobResponse } from './jobs.schema';
import { jobRerunBody, jobStepsResponse } from './jobReruns.schema';

const tags = ['Jobs'];

/**
 * @param deps app dependencies.
 * @returns the route declarations.
 */
export function jobRerunRoutes(deps: ExecutionRouteDeps): RouteSpec[] {
  return [
    route({
      method: 'get',
      path: '/jobs/:id/steps',
      summary:
        'The job’s steps: its iterations and each one’s execution steps (model turns, tool calls), to rerun from one',
      tags,
      auth: 'service',
      scope: 'jobs:read',
      params: idParams,
      responses: { 200: jobStepsResponse },
      handler: async (ctx, { params }) => {
        const { job, iterations } = await jobSteps(ctx.state.auth, params.id);
        ctx.body = {
          job_id: job._id,
          iterations: iterations.map((i) => ({
            n: i.n,
            execution_id: i.executionId,
            reason: i.reason,
            status: i.status,
            steps:
              i.steps?.map((s) => ({
                step: s.step,
                kind: s.kind,
                round: s.round,
                ...(s.toolUseId ? { tool_use_id: s.toolUseId } : {}),
                ...(s.name ? { name: s.name } : {}),
              })) ?? null,
            unavailable: i.unavailable ?? null,
          })),
        };
      },
    }),
    route({
      method: 'post',
      path: '/jobs/:id/rerun',
      summary:
        'Rerun the job from a step as a new job: earlier iterations taken over, earlier steps reused (no tool called, no model turn billed again)',
      tags,
      auth: 'service',
      scope: 'jobs:write',
      params: idParams,
      body: jobRerunBody,
      responses: { 201: jobResponse },
      errors: [409, 410],
      handler: async (ctx, { params, body }) => {
        const job = await rerunJob(deps, ctx.state.auth, params.id, {
          iteration: body.iteration,
          step: body.step,
          input: body.input,
        });
        ctx.status = 201;
        ctx.body = { job: presentJob(job) };
      },
    }),
  ];
}
