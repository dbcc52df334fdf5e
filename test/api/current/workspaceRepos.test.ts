/**
 * Workspace repositories over real HTTP: a real git server over https on loopback (git http-backend, a
 * certificate made in the test), real git clones by the real workflow and activity, credentials from the space's
 * encrypted environment, progress on the repository's stream; refusals (http, credentials in the URL, options
 * as branches, paths outside the workspace, private addresses unless allowed); and a worker killed mid-clone: the
 * next worker clones it, once. The `git` initialization of a space takes the same path (one clone however often
 * it is sent); each clone records its service events once; a workspace's repositories are listed page by page.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { refusedHostMessage } from '../../../lib/safeDestination';
import path from 'node:path';
import { WEBHOOK_EVENT_DATA } from '../../../api/current/webhookEvents.schema';
import { checkResponse } from '../../../lib/ajv';
import { readEvents } from '../../../commands/eventLog';
import { repoStreamId, ServiceEvent, WorkspaceRepo } from '../../../models';
import { createTestApp, useServedTestApp, useTestApp, type TestApp } from '../../helpers/app';
import { currentAs, currentError } from '../../helpers/current';
import { childTestEnv } from '../../helpers/env';
import { bearer, buildWorkspace } from '../../helpers/factories';
import { startGitServer, type GitServer } from '../../helpers/gitServer';
import { useTestDatabase } from '../../helpers/mongo';
import { spawnScript, type Spawned } from '../../helpers/processes';
import { openSse } from '../../helpers/sse';
import { until } from '../../helpers/until';
import { useTestWorker } from '../../helpers/worker';

const db = useTestDatabase();
let server: GitServer;
beforeAll(async () => {
  server = await startGitServer({ token: 'tok-123' });
});
const served = useServedTestApp(() => ({
  WEBHOOK_ALLOW_PRIVATE: 'true',
  GIT_SSL_CA_INFO: server.caFile,
  TEMPORAL_TASK_QUEUE: `repos-${randomBytes(4).toString('hex')}`,
}));
const strict = useTestApp(() => ({
  WEBHOOK_ALLOW_PRIVATE: 'false',
  GIT_SSL_CA_INFO: server.caFile,
  TEMPORAL_TASK_QUEUE: `repos-strict-${randomBytes(4).toString('hex')}`,
}));
useTestWorker(() => served.t);
useTestWorker(() => strict);
afterAll(async () => server?.close());

async function workspace(app: TestApp = served.t) {
  const { org, id, dir } = await buildWorkspace(app, { name: 'Code' });
  return { org, api: currentAs(app, org.serviceToken), id, dir };
}

const waitForRepo = async (repoId: string, status: string): Promise<void> => {
  await until(
    async () => (await WorkspaceRepo.findById(repoId).lean())?.status,
    (s) => s === status,
    90_000,
    100,
    `repository ${repoId} reaching ${status}`
  );
};

/**
 * Checks a clone's service events, once its last one is recorded: exactly `repo.clone_started` then `end`, each
 * once, with their data, each valid against its webhook schema.
 * @param organizationId the organization.
 * @param mount the repository (id, workspace, url, path; branch: the remote's default).
 * @param end the last event's type and the fields it adds.
 */
async function expectCloneServiceEvents(
  organizationId: string,
  mount: { repoId: string; workspaceId: string; url: string; path: string },
  end: ['repo.clone_completed', { commit: string }] | ['repo.clone_failed', { error: string }]
): Promise<void> {
  const read = async () =>
    (await ServiceEvent.find({ organizationId }).sort({ createdAt: 1 }).lean())
      .map((d) => ({ type: d.type, data: JSON.parse(d.data) as Record<string, unknown> }))
      .filter((e) => e.type.startsWith('repo.') && e.data.repoId === mount.repoId);
  await until(async () => (await read()).some((e) => e.type === end[0]), Boolean, 90_000, 100, end[0]);
  const events = await read();
  expect(events).toEqual([
    { type: 'repo.clone_started', data: { ...mount, branch: null } },
    { type: end[0], data: { ...mount, ...end[1] } },
  ]);
  for (const e of events)
    expect(checkResponse(WEBHOOK_EVENT_DATA[e.type as keyof typeof WEBHOOK_EVENT_DATA], e.data)).toBeUndefined();
}

const git = (cwd: string, ...args: string[]): string =>
  execFileSync('git', ['-c', `safe.directory=${cwd}`, ...args], { cwd, encoding: 'utf8' }).trim();

describe('clone', () => {
  it('clones an https repository durably with credentials from the space environment, depth 1', async () => {
    const w = await workspace();
    const env = await w.api.post(`/spaces/${w.id}/environment`, { environmentVariables: { GIT_TOKEN: 'tok-123' } });
    expect(env.status).toBe(200);
    const created = await w.api.post(`/workspaces/${w.id}/repos`, {
      url: server.url,
      branch: 'main',
      path: 'src/project',
      credentials_env: 'GIT_TOKEN',
    });
    expect(created.status).toBe(201);
    expect(created.body.repo).toMatchObject({
      url: server.url,
      branch: 'main',
      path: 'src/project',
      status: 'registered',
      depth: 1,
    });
    const repoId: string = created.body.repo.id;

    const started = await w.api.post(`/workspaces/${w.id}/repos/clone`, { repo_id: repoId });
    expect(started.status).toBe(202);
    expect(started.body.repo.status).toBe('cloning');
    const stream = await openSse(`${served.base}${started.body.events_url}`, {
      headers: { authorization: bearer(w.org.serviceToken) },
    });
    await stream.ended;
    const names = stream.events.map((e) => e.event);
    expect(names[0]).toBe('clone.started');
    expect(names.at(-1)).toBe('clone.completed');
    expect(JSON.parse(stream.events.at(-1)!.data)).toEqual({ repo_id: repoId, commit: server.commits[0] });

    const repo = await w.api.get(`/workspaces/${w.id}/repos/${repoId}`);
    expect(repo.body.repo).toMatchObject({ status: 'ready', commit: server.commits[0], error: null });
    const dir = path.join(w.dir, 'src/project');
    expect(readFileSync(path.join(dir, 'README.md'), 'utf8')).toBe('# Project\n');
    expect(git(dir, 'rev-list', '--count', 'HEAD')).toBe('1');
    // The token went as a header, and is written nowhere in the clone.
    expect(server.authorizations).toContain(`Basic ${Buffer.from('x-access-token:tok-123').toString('base64')}`);
    expect(readFileSync(path.join(dir, '.git/config'), 'utf8')).not.toContain('tok-123');
    expect(
      readdirSync(path.join(served.t.config.workspacesDir, '.clones')).filter((n) => n.startsWith(repoId))
    ).toEqual([]);
    // Its files are workspace files (the data query reads the cloned CSV).
    const q = await w.api.post(`/workspaces/${w.id}/data-blocks/query`, {
      sql: "SELECT * FROM 'src/project/data.csv'",
    });
    expect(q.body.result.rows).toEqual([['1', '2']]);

    const again = await w.api.post(`/workspaces/${w.id}/repos/clone`, { repo_id: repoId });
    expect(again.status).toBe(409);
  }, 120_000);

  it('a clone that fails (wrong credentials) is recorded failed with git’s reason', async () => {
    const w = await workspace();
    await w.api.post(`/spaces/${w.id}/environment`, { environmentVariables: { GIT_TOKEN: 'wrong' } });
    const created = await w.api.post(`/workspaces/${w.id}/repos`, { url: server.url, credentials_env: 'GIT_TOKEN' });
    expect(created.body.repo.path).toBe('project');
    const repoId: string = created.body.repo.id;
    expect((await w.api.post(`/workspaces/${w.id}/repos/clone`, { repo_id: repoId })).status).toBe(202);
    await waitForRepo(repoId, 'failed');
    const repo = (await w.api.get(`/workspaces/${w.id}/repos/${repoId}`)).body.repo;
    expect(repo.error).toMatch(/git clone failed: .*(Authentication failed|could not read Username|401)/);
    expect(existsSync(path.join(w.dir, 'project'))).toBe(false);
    // The record turns failed just before the stream's terminal event is appended: wait for that event.
    await until(
      async () => (await readEvents(repoStreamId(repoId))).at(-1)?.event === 'clone.failed',
      Boolean,
      90_000,
      100,
      'clone.failed event'
    );
    const events = await readEvents(repoStreamId(repoId));
    // git's refusal is retried (three attempts, each on the stream); the service events are recorded once each.
    expect(events.filter((e) => e.event === 'clone.started').map((e) => e.data.attempt)).toEqual([1, 2, 3]);
    await expectCloneServiceEvents(
      w.org.organizationId,
      { repoId, workspaceId: w.id, url: server.url, path: 'project' },
      ['repo.clone_failed', { error: repo.error }]
    );
  }, 120_000);
});

describe('refusals', () => {
  it('refuses non-https URLs, credentials in URLs, option-like branches and paths outside the workspace', async () => {
    const w = await workspace();
    for (const [body, message] of [
      [{ url: 'http://localhost/project.git' }, /https/],
      [{ url: 'ext::sh -c touch% /tmp/pwned' }, /url/],
      [{ url: 'file:///etc' }, /url/],
      [{ url: 'https://user:pass@localhost/x.git' }, /credentials/],
      [{ url: server.url, branch: '--upload-pack=touch /tmp/x' }, /branch/],
      [{ url: server.url, path: '../../outside' }, /Invalid path/],
      [{ url: server.url, path: '/etc' }, /Invalid path/],
      [{ url: server.url, credentials_env: 'A B' }, /credentials_env/],
    ] as const) {
      const r = await w.api.post(`/workspaces/${w.id}/repos`, body);
      expect([JSON.stringify(body), r.status]).toEqual([JSON.stringify(body), 400]);
      expect(r.body.error.message).toMatch(message);
    }
  });

  it('without WEBHOOK_ALLOW_PRIVATE: a literal private address is refused, a name resolving to one fails the clone', async () => {
    const w = await workspace(strict);
    const literal = await w.api.post(`/workspaces/${w.id}/repos`, { url: 'https://127.0.0.1:9/x.git' });
    expect(literal.status).toBe(400);
    expect(literal.body.error.message).toMatch(/not public/);
    const named = await w.api.post(`/workspaces/${w.id}/repos`, { url: server.url });
    expect(named.status).toBe(201);
    const before = server.authorizations.length;
    await w.api.post(`/workspaces/${w.id}/repos/clone`, { repo_id: named.body.repo.id });
    await waitForRepo(named.body.repo.id, 'failed');
    const repo = await WorkspaceRepo.findById(named.body.repo.id).lean();
    expect(repo!.error).toBe(refusedHostMessage('localhost'));
    // git was never started: nothing reached the server.
    expect(server.authorizations.length).toBe(before);
  }, 120_000);
});

describe('git initialization (POST /api/spaces/{id}/init)', () => {
  it('clones the repository into the workspace root by the same durable clone; sent twice, it clones once', async () => {
    const w = await workspace();
    await w.api.post(`/spaces/${w.id}/environment`, { environmentVariables: { GIT_TOKEN: 'tok-123' } });
    const body = { type: 'git', url: server.url, credentialsEnv: 'GIT_TOKEN', spaceName: 'Cloned' };
    // Two at once: one mount, one clone.
    const [first, second] = await Promise.all([
      w.api.post(`/spaces/${w.id}/init`, body),
      w.api.post(`/spaces/${w.id}/init`, body),
    ]);
    expect([first.status, second.status]).toEqual([200, 200]);
    const repoId: string = first.body.repo.id;
    expect(first.body).toEqual({
      success: true,
      spaceId: w.id,
      type: 'git',
      files: [],
      repo: expect.objectContaining({
        id: repoId,
        workspace_id: w.id,
        url: server.url,
        branch: null,
        path: '',
        depth: 1,
        credentials_env: 'GIT_TOKEN',
      }),
      eventsUrl: `/api/workspaces/${w.id}/repos/${repoId}/events`,
    });
    expect(second.body.repo.id).toBe(repoId);
    expect(['registered', 'cloning', 'ready']).toContain(first.body.repo.status);

    const stream = await openSse(`${served.base}${first.body.eventsUrl}`, {
      headers: { authorization: bearer(w.org.serviceToken) },
    });
    await stream.ended;
    expect(stream.events.filter((e) => e.event === 'clone.started')).toHaveLength(1);
    expect(stream.events.at(-1)!.event).toBe('clone.completed');
    // The space is the repository: its files are in the workspace root.
    expect(readdirSync(w.dir).sort()).toEqual(['.git', 'README.md', 'data.csv']);
    expect(readFileSync(path.join(w.dir, 'README.md'), 'utf8')).toBe('# Project\n');
    expect(git(w.dir, 'rev-parse', 'HEAD')).toBe(server.commits[0]);
    expect(readFileSync(path.join(w.dir, '.git/config'), 'utf8')).not.toContain('tok-123');
    const space = await served.t.request.get(`/api/v1/spaces/${w.id}`).set('Authorization', bearer(w.org.apiToken));
    expect(space.body.space).toMatchObject({ name: 'Cloned', initializedAs: 'git', fileCount: 2 });
    const listed = await w.api.get(`/workspaces/${w.id}/repos`);
    expect(listed.body).toEqual({
      repos: [expect.objectContaining({ id: repoId, status: 'ready', commit: server.commits[0] })],
      next_cursor: null,
    });

    // The same init again answers the same mount, now cloned, and asks the git server for nothing.
    const requests = server.authorizations.length;
    const again = await w.api.post(`/spaces/${w.id}/init`, body);
    expect(again.status).toBe(200);
    expect(again.body.repo).toMatchObject({ id: repoId, status: 'ready', commit: server.commits[0] });
    // Another initialization is a conflict.
    for (const other of [{ ...body, branch: 'main' }, { type: 'readme' }]) {
      const r = await w.api.post(`/spaces/${w.id}/init`, other);
      expect(r.body).toEqual(currentError('conflict', 'Space already initialized'));
    }
    expect(server.authorizations.length).toBe(requests);
    expect(await readEvents(repoStreamId(repoId))).toEqual(
      expect.arrayContaining([expect.objectContaining({ event: 'clone.completed' })])
    );
    expect((await readEvents(repoStreamId(repoId))).filter((e) => e.event === 'clone.started')).toHaveLength(1);

    await expectCloneServiceEvents(w.org.organizationId, { repoId, workspaceId: w.id, url: server.url, path: '' }, [
      'repo.clone_completed',
      { commit: server.commits[0] },
    ]);
  }, 120_000);

  it('refuses a missing url, a non-https url, a private address and bad fields (400) and leaves the space as it was', async () => {
    const w = await workspace();
    for (const [body, message] of [
      [{ type: 'git' }, /^Missing required field: url$/],
      [{ type: 'git', url: 'http://localhost/project.git' }, /https/],
      [{ type: 'git', url: 'file:///etc' }, /^Field url must be an http or https URL$/],
      [{ type: 'git', url: 'https://user:pass@localhost/x.git' }, /credentials/],
      [{ type: 'git', url: server.url, branch: '--upload-pack=touch /tmp/x' }, /branch/],
      [{ type: 'git', url: server.url, path: '../outside' }, /Invalid path/],
      [{ type: 'git', url: server.url, credentialsEnv: 'A B' }, /credentialsEnv/],
      [{ type: 'git', url: server.url, depth: 0 }, /depth/],
    ] as const) {
      const r = await w.api.post(`/spaces/${w.id}/init`, body);
      expect([JSON.stringify(body), r.status, r.body.error.code]).toEqual([
        JSON.stringify(body),
        400,
        'validation_failed',
      ]);
      expect(r.body.error.message).toMatch(message);
    }
    const s = await workspace(strict);
    const literal = await s.api.post(`/spaces/${s.id}/init`, { type: 'git', url: 'https://127.0.0.1:9/x.git' });
    expect(literal.status).toBe(400);
    expect(literal.body.error.message).toMatch(/not public/);
    // Nothing was recorded or claimed.
    expect(await WorkspaceRepo.countDocuments({ spaceId: w.id })).toBe(0);
    expect(await WorkspaceRepo.countDocuments({ spaceId: s.id })).toBe(0);
    expect((await w.api.post(`/spaces/${w.id}/init`, { type: 'empty' })).status).toBe(200);
  });
});

describe('GET /api/workspaces/{id}/repos', () => {
  it('pages the workspace’s repositories newest first with their status; another organization gets 404', async () => {
    const w = await workspace();
    const ids: string[] = [];
    for (const name of ['a', 'b', 'c']) {
      const r = await w.api.post(`/workspaces/${w.id}/repos`, { url: `https://localhost:9/${name}.git` });
      ids.push(r.body.repo.id);
      await new Promise((r) => setTimeout(r, 5)); // distinct creation times: the order is the creation order
    }
    // Another workspace of the same organization keeps its own.
    const otherId: string = (await w.api.post('/workspaces', { name: 'Other' })).body.workspace.id;
    await w.api.post(`/workspaces/${otherId}/repos`, { url: 'https://localhost:9/d.git' });

    const page1 = await w.api.get(`/workspaces/${w.id}/repos?limit=2`);
    expect(page1.status).toBe(200);
    expect(page1.body.repos.map((r: { id: string }) => r.id)).toEqual([ids[2], ids[1]]);
    expect(page1.body.repos[0]).toMatchObject({ workspace_id: w.id, path: 'c', status: 'registered', commit: null });
    expect(typeof page1.body.next_cursor).toBe('string');
    const page2 = await w.api.get(`/workspaces/${w.id}/repos?limit=2&cursor=${page1.body.next_cursor}`);
    expect(page2.body).toEqual({ repos: [expect.objectContaining({ id: ids[0] })], next_cursor: null });
    expect((await w.api.get(`/workspaces/${otherId}/repos`)).body.repos).toHaveLength(1);

    expect((await w.api.get(`/workspaces/${w.id}/repos?cursor=nonsense`)).body).toEqual(
      currentError('validation_failed', 'Invalid cursor')
    );
    const stranger = await workspace();
    const foreign = await stranger.api.get(`/workspaces/${w.id}/repos`);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual(currentError('not_found', 'Workspace not found'));
  });
});

describe('a worker killed mid-clone', () => {
  const workers: Spawned[] = [];
  let slow: GitServer;
  afterAll(async () => {
    workers.forEach((w) => w.crash());
    await slow?.close();
  });

  it('the next worker clones the repository, once', async () => {
    slow = await startGitServer({ packDelayMs: 4000 });
    const queue = `repos-crash-${randomBytes(4).toString('hex')}`;
    const app = createTestApp({
      WEBHOOK_ALLOW_PRIVATE: 'true',
      GIT_SSL_CA_INFO: slow.caFile,
      TEMPORAL_TASK_QUEUE: queue,
    });
    try {
      const startWorker = async (): Promise<Spawned> => {
        const proc = spawnScript(
          'worker/index.ts',
          childTestEnv({
            MONGODB_URI: db.uri,
            TEMPORAL_TASK_QUEUE: queue,
            WEBHOOK_ALLOW_PRIVATE: 'true',
            GIT_SSL_CA_INFO: slow.caFile,
            WORKSPACES_DIR: app.config.workspacesDir,
          })
        );
        workers.push(proc);
        await proc.waitFor(/worker started/, 90_000);
        return proc;
      };
      const first = await startWorker();
      const w = await workspace(app);
      const created = await w.api.post(`/workspaces/${w.id}/repos`, { url: slow.url, path: 'code' });
      const repoId: string = created.body.repo.id;
      expect((await w.api.post(`/workspaces/${w.id}/repos/clone`, { repo_id: repoId })).status).toBe(202);
      // git is waiting for its pack: kill the worker running it.
      await slow.packRequested;
      first.crash();
      await first.exited();
      await startWorker();
      await waitForRepo(repoId, 'ready');
      await until(
        async () => (await readEvents(repoStreamId(repoId))).some((e) => e.event === 'clone.completed'),
        Boolean,
        30_000,
        100,
        'a clone.completed event'
      );

      const events = await readEvents(repoStreamId(repoId));
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      expect(events.filter((e) => e.event === 'clone.completed')).toHaveLength(1);
      const attempts = events.filter((e) => e.event === 'clone.started').map((e) => e.data.attempt);
      expect(attempts).toEqual([1, 2]);
      await expectCloneServiceEvents(w.org.organizationId, { repoId, workspaceId: w.id, url: slow.url, path: 'code' }, [
        'repo.clone_completed',
        { commit: slow.commits[0] },
      ]);
      // The killed attempt's git had asked for its pack; the next attempt asked again.
      expect(slow.packRequests).toBeGreaterThanOrEqual(2);
      const dir = path.join(w.dir, 'code');
      expect(readdirSync(dir).sort()).toEqual(['.git', 'README.md', 'data.csv']);
      expect(git(dir, 'rev-parse', 'HEAD')).toBe(slow.commits[0]);
      expect(readdirSync(w.dir)).toEqual(['code']);
      expect(readdirSync(path.join(app.config.workspacesDir, '.clones')).filter((n) => n.startsWith(repoId))).toEqual(
        []
      );
    } finally {
      await app.close();
    }
  }, 180_000);
});
