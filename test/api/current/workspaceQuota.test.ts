/**
 * The workspace size cap under concurrency (issue 30 point 5; commands/workspaceQuota.ts): real concurrent uploads
 * over HTTP into one workspace never store more than its cap together, and an upload whose process is killed
 * (SIGKILL) frees its reservation once its lease has passed, its temporary file included.
 *
 * The figures scaled down 1,024 times: 12 uploads of 100 KiB into a workspace of 1 MiB (10 fit).
 */
import http from 'node:http';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { freePort } from '../../../scripts/servers/launch';
import { WorkspaceReservation } from '../../../models';
import { useServedTestApp } from '../../helpers/app';
import { currentError } from '../../helpers/current';
import { childTestEnv } from '../../helpers/env';
import { bearer, buildWorkspace } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { spawnScript, type Spawned } from '../../helpers/processes';
import { until } from '../../helpers/until';

const db = useTestDatabase();
const KIB = 1024;
const CAP = 1024 * KIB;
const FILE = 100 * KIB;
// Long enough that a loaded machine renews every lease in time (a renewal every third of it), short enough for the
// kill test to see one pass.
const LEASE_MS = 5000;
const caps = {
  WORKSPACE_MAX_BYTES: String(CAP),
  WORKSPACE_FILE_MAX_BYTES: String(FILE),
  WORKSPACE_RESERVATION_LEASE_MS: String(LEASE_MS),
};
const app = useServedTestApp(caps);

async function workspace() {
  const { org, id, dir } = await buildWorkspace(app.t, { name: 'Quota' });
  return { id, auth: bearer(org.serviceToken), dir };
}

/** An upload through the app under test (one request, the whole body at once). */
function putFile(w: { id: string; auth: string }, p: string, bytes: number) {
  return app.t.request
    .put(`/api/workspaces/${w.id}/files/content`)
    .query({ path: p })
    .set('Authorization', w.auth)
    .set('Content-Type', 'application/octet-stream')
    .send(Buffer.alloc(bytes, 1));
}

/** An upload whose body the test sends in two halves, so that it can hold uploads open at once. */
interface OpenUpload {
  sendRest(): void;
  /** Status and body, once the answer came. */
  answer: Promise<{ status: number; body: string }>;
  answered(): boolean;
}

function startUpload(url: string, auth: string, bytes: Buffer, firstPart: number): OpenUpload {
  let done = false;
  const req = http.request(url, {
    method: 'PUT',
    headers: { Authorization: auth, 'Content-Type': 'application/octet-stream', 'Content-Length': bytes.length },
  });
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => {
        done = true;
        resolve({ status: res.statusCode!, body });
      });
    });
    req.on('error', (err) => (done ? undefined : reject(err)));
  });
  answer.catch(() => undefined); // a test that fails early must not leave an unhandled rejection behind
  req.write(bytes.subarray(0, firstPart));
  return {
    sendRest: () => {
      req.end(bytes.subarray(firstPart));
    },
    answer,
    answered: () => done,
  };
}

/** The temporary files of uploads in progress (none while the workspace directory does not exist yet). */
function temporaries(dir: string): string[] {
  try {
    return readdirSync(dir).filter((n) => /^\.upload-.*\.tmp$/.test(n));
  } catch {
    return [];
  }
}

describe('workspace cap under concurrency (WORKSPACE_MAX_BYTES=1 MiB, 100 KiB per file)', () => {
  it('12 concurrent uploads of 100 KiB into an empty workspace: 10 are stored (201), 2 refused (413)', async () => {
    const w = await workspace();
    const uploads = Array.from({ length: 12 }, (_, i) =>
      startUpload(
        `${app.base}/api/workspaces/${w.id}/files/content?path=f${i}.bin`,
        w.auth,
        Buffer.alloc(FILE, i),
        FILE / 2
      )
    );
    // Every upload is under way (writing its file beside its target) or already refused before any completes: the
    // service decided all twelve while none was stored.
    await until(
      async () => temporaries(w.dir).length,
      (writing) => writing + uploads.filter((u) => u.answered()).length === 12,
      30_000,
      20
    );
    for (const u of uploads) u.sendRest();
    const answers = await Promise.all(uploads.map((u) => u.answer));

    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([...Array(10).fill(201), 413, 413]);
    for (const refused of answers.filter((a) => a.status === 413))
      expect(JSON.parse(refused.body)).toEqual({
        error: {
          code: 'payload_too_large',
          message: expect.stringMatching(/^The workspace would exceed its limit of 1048576 bytes \(\d+ bytes left\)$/),
        },
      });
    const stored = readdirSync(w.dir);
    expect(stored).toHaveLength(10);
    const total = stored.reduce((n, f) => n + statSync(path.join(w.dir, f)).size, 0);
    expect(total).toBe(10 * FILE);
    expect(total).toBeLessThanOrEqual(CAP);
    // Every reservation was closed when its upload ended.
    expect(await WorkspaceReservation.countDocuments({ spaceId: w.id, open: true })).toBe(0);
  });

  it('an upload of unknown length holds what it may still take: a concurrent upload gets only the rest', async () => {
    const w = await workspace();
    const put = (p: string, bytes: number) => putFile(w, p, bytes);
    for (let i = 0; i < 9; i++) expect((await put(`f${i}.bin`, FILE)).status).toBe(201);
    // 9 × 100 KiB stored, 124 KiB left; a chunked upload (no Content-Length) holds 100 KiB of it while it runs.
    const chunked = http.request(`${app.base}/api/workspaces/${w.id}/files/content?path=chunked.bin`, {
      method: 'PUT',
      headers: { Authorization: w.auth, 'Transfer-Encoding': 'chunked' },
    });
    const answer = new Promise<number>((resolve, reject) => {
      chunked.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      });
      chunked.on('error', reject);
    });
    answer.catch(() => undefined); // a test that fails early must not leave an unhandled rejection behind
    chunked.write(Buffer.alloc(10 * KIB, 2));
    await until(
      async () => WorkspaceReservation.countDocuments({ spaceId: w.id, open: true }),
      (n) => n === 1
    );
    const over = await put('more.bin', 25 * KIB);
    expect(over.status).toBe(413);
    expect(over.body).toEqual(
      currentError('payload_too_large', 'The workspace would exceed its limit of 1048576 bytes (24576 bytes left)')
    );
    expect((await put('more.bin', 24 * KIB)).status).toBe(201);
    chunked.end(Buffer.alloc(10 * KIB, 2));
    expect(await answer).toBe(201);
  });
});

describe('a killed upload (SIGKILL of its api process)', () => {
  let api: Spawned | undefined;
  afterAll(() => api?.crash());

  it('holds its room until its lease passes, then frees it; its temporary file is removed', async () => {
    const w = await workspace();
    const port = await freePort();
    api = spawnScript(
      'api/server.ts',
      // Files up to 600 KiB on that process.
      childTestEnv({
        ...caps,
        WORKSPACE_FILE_MAX_BYTES: String(600 * KIB),
        MONGODB_URI: db.uri,
        WORKSPACES_DIR: app.t.config.workspacesDir,
        PORT: String(port),
      })
    );
    await api.waitFor(/api listening/, 60_000);

    // 600 KiB declared on the other process: 100 KiB sent, then it is killed mid-upload.
    const doomed = startUpload(
      `http://127.0.0.1:${port}/api/workspaces/${w.id}/files/content?path=doomed.bin`,
      w.auth,
      Buffer.alloc(600 * KIB, 7),
      FILE
    );
    await until(
      async () => temporaries(w.dir).length,
      (n) => n === 1
    );
    const put = (p: string, bytes: number) => putFile(w, p, bytes);
    for (let i = 0; i < 4; i++) expect((await put(`f${i}.bin`, FILE)).status).toBe(201);
    // 600 KiB held by the live upload + 400 KiB stored: 24 KiB left.
    expect((await put('f4.bin', FILE)).body).toEqual(
      currentError('payload_too_large', 'The workspace would exceed its limit of 1048576 bytes (24576 bytes left)')
    );

    api.crash();
    await api.exited();
    await expect(doomed.answer).rejects.toThrow(); // never answered: its connection died with the process
    // Its lease passes (no process renews it): the room comes back.
    await until(
      async () => (await put('f4.bin', FILE)).status,
      (s) => s === 201,
      30_000,
      250
    );
    expect((await put('f5.bin', FILE)).status).toBe(201);
    // The temporary file it left is removed by a later check once it is stale (two leases untouched).
    await until(
      async () => {
        await put('probe.bin', 1);
        return temporaries(w.dir);
      },
      (left) => left.length === 0,
      30_000,
      250
    );
    expect(readdirSync(w.dir).sort()).toEqual([
      'f0.bin',
      'f1.bin',
      'f2.bin',
      'f3.bin',
      'f4.bin',
      'f5.bin',
      'probe.bin',
    ]);
  }, 150_000);
});
