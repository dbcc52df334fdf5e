/**
 * Workspace repositories over real HTTP: a real git server over https on loopback (git http-backend, a
 * certificate made in the test), real git clones by the real workflow and activity, credentials from the space's
 * encrypted environment, progress on the repository's stream; refusals (http, credentials in the URL, options
 * as branches, paths outside the workspace, private addresses unless allowed); and a worker killed mid-clone: the
 * next worker clones it, once.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { readEvents } from '../../../lib/eventLog';
import { repoStreamId, WorkspaceRepo } from '../../../models';
import { createTestApp, type TestApp } from '../../helpers/app';
import { currentAs } from '../../helpers/current';
import { childTestEnv } from '../../helpers/env';
import { bearer, buildOrg } from '../../helpers/factories';
import { startGitServer, type GitServer } from '../../helpers/gitServer';
import { useTestDatabase } from '../../helpers/mongo';
import { spawnScript, type Spawned } from '../../helpers/processes';
import { openSse } from '../../helpers/sse';
import { startTestWorker, type TestWorker } from '../../helpers/worker';

const db = useTestDatabase();
let server: GitServer;
let t: TestApp;
let strict: TestApp;
let worker: TestWorker;
let strictWorker: TestWorker;
let base: string;

beforeAll(async () => {
  server = await startGitServer({ token: 'tok-123' });
  t = createTestApp({
    WEBHOOK_ALLOW_PRIVATE: 'true',
    GIT_SSL_CA_INFO: server.caFile,
    TEMPORAL_TASK_QUEUE: `repos-${randomBytes(4).toString('hex')}`,
  });
  strict = createTestApp({
    WEBHOOK_ALLOW_PRIVATE: 'false',
    GIT_SSL_CA_INFO: server.caFile,
    TEMPORAL_TASK_QUEUE: `repos-strict-${randomBytes(4).toString('hex')}`,
  });
  worker = await startTestWorker(t.config);
  strictWorker = await startTestWorker(strict.config);
  base = await t.listen();
});
afterAll(async () => {
  await worker?.stop();
  await strictWorker?.stop();
  await t?.close();
  await strict?.close();
  await server?.close();
});

async function workspace(app: TestApp = t) {
  const org = await buildOrg();
  const api = currentAs(app, org.serviceToken);
  const id: string = (await api.post('/workspaces', { name: 'Code' })).body.workspace.id;
  return { org, api, id, dir: path.join(app.config.workspacesDir, org.organizationId, id) };
}

async function waitForRepo(repoId: string, status: string): Promise<void> {
  const deadline = Date.now() + 90_000;
  while ((await WorkspaceRepo.findById(repoId).lean())?.status !== status) {
    if (Date.now() > deadline) throw new Error(`repository ${repoId} did not reach ${status}`);
    await new Promise((r) => setTimeout(r, 100));
  }
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
    const stream = await openSse(`${base}${started.body.events_url}`, {
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
    expect(readdirSync(path.join(t.config.workspacesDir, '.clones')).filter((n) => n.startsWith(repoId))).toEqual([]);
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
    const events = await readEvents(repoStreamId(repoId));
    expect(events.at(-1)!.event).toBe('clone.failed');
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
    expect(repo!.error).toMatch(/localhost resolves to an address that is not public/);
    // git was never started: nothing reached the server.
    expect(server.authorizations.length).toBe(before);
  }, 120_000);
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
      const deadline = Date.now() + 30_000;
      while (!(await readEvents(repoStreamId(repoId))).some((e) => e.event === 'clone.completed')) {
        if (Date.now() > deadline) throw new Error('no clone.completed event');
        await new Promise((r) => setTimeout(r, 100));
      }

      const events = await readEvents(repoStreamId(repoId));
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      expect(events.filter((e) => e.event === 'clone.completed')).toHaveLength(1);
      const attempts = events.filter((e) => e.event === 'clone.started').map((e) => e.data.attempt);
      expect(attempts).toEqual([1, 2]);
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
