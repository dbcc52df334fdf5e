/**
 * Workspace repositories on the current surface [docs/decisions.md "Repositories"]: record a mount, clone it
 * durably, list a workspace's mounts, read one's state, and follow the clone's progress as a stream.
 */
import { createRepo, findRepo, listRepos, startClone } from '../../commands/workspaceRepos';
import { repoStreamId } from '../../models';
import { presentRepo, repoEventsUrl } from '../../presenters/workspaceRepo';
import type { AppDeps } from '../deps';
import { route, type RouteSpec } from '../route';
import { idParams, pageQuery } from '../schemas';
import { requestedLastEventId, streamEvents, streamFullyRead, streamQuery } from '../sse';
import {
  cloneBody,
  cloneResponse,
  repoCreateBody,
  repoEvents,
  repoListResponse,
  repoParams,
  repoResponse,
} from './workspaceRepos.schema';

const tags = ['Workspace repositories'];

/**
 * @param deps configuration, Temporal, the event tailer.
 * @returns the route declarations.
 */
export function workspaceRepoRoutes(deps: AppDeps): RouteSpec[] {
  return [
    route({
      method: 'post',
      path: '/workspaces/:id/repos',
      summary: 'Add a repository mount: an https git URL, a branch and the folder it is cloned into',
      tags,
      auth: 'service',
      scope: 'workspaces:write',
      params: idParams,
      body: repoCreateBody,
      responses: { 201: repoResponse },
      handler: async (ctx, { params, body }) => {
        const repo = await createRepo(deps.config, ctx.state.auth, params.id, {
          url: body.url,
          branch: body.branch,
          path: body.path,
          depth: body.depth,
          credentialsEnv: body.credentials_env,
        });
        ctx.status = 201;
        ctx.body = { repo: presentRepo(repo) };
      },
    }),
    route({
      method: 'post',
      path: '/workspaces/:id/repos/clone',
      summary: 'Clone a repository mount durably (progress on …/repos/{repoId}/events; 409 once cloned)',
      tags,
      auth: 'service',
      scope: 'workspaces:write',
      params: idParams,
      body: cloneBody,
      responses: { 202: cloneResponse },
      errors: [409],
      handler: async (ctx, { params, body }) => {
        const repo = await startClone(deps, ctx.state.auth, params.id, body.repo_id);
        ctx.status = 202;
        ctx.body = { repo: presentRepo(repo), events_url: repoEventsUrl(repo) };
      },
    }),
    route({
      method: 'get',
      path: '/workspaces/:id/repos',
      summary: 'List the workspace’s repository mounts, newest first, each with the state of its clone',
      tags,
      auth: 'service',
      scope: 'workspaces:read',
      params: idParams,
      query: pageQuery(),
      responses: { 200: repoListResponse },
      handler: async (ctx, { params, query }) => {
        const { items, nextCursor: next } = await listRepos(ctx.state.auth, params.id, query);
        ctx.body = { repos: items.map(presentRepo), next_cursor: next };
      },
    }),
    route({
      method: 'get',
      path: '/workspaces/:id/repos/:repoId',
      summary: 'A repository mount and the state of its clone',
      tags,
      auth: 'service',
      scope: 'workspaces:read',
      params: repoParams,
      responses: { 200: repoResponse },
      handler: async (ctx, { params }) => {
        ctx.body = { repo: presentRepo(await findRepo(ctx.state.auth, params.id, params.repoId)) };
      },
    }),
    route({
      method: 'get',
      path: '/workspaces/:id/repos/:repoId/events',
      summary: 'The clone’s progress stream: replay after Last-Event-ID, then live, until completed or failed',
      tags,
      auth: 'service',
      scope: 'workspaces:read',
      params: repoParams,
      query: streamQuery,
      responses: { 200: { sse: true, description: 'text/event-stream: the clone’s events' }, 204: streamFullyRead },
      events: repoEvents,
      handler: async (ctx, { params }) => {
        const repo = await findRepo(ctx.state.auth, params.id, params.repoId);
        const streamId = repoStreamId(repo._id);
        await streamEvents(ctx, {
          streamId,
          afterSeq: requestedLastEventId(ctx) ?? 0,
          tailer: deps.events,
          shutdown: deps.shutdown,
          isTerminal: (e) => e.event === 'clone.completed' || e.event === 'clone.failed',
          heartbeatMs: deps.config.sseHeartbeatMs,
          ended: repo.status === 'ready' || repo.status === 'failed',
        });
      },
    }),
  ];
}
