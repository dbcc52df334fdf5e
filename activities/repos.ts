/**
 * Repository clones [docs/decisions.md "Repositories"]: the activities of the repoClone workflow. `git` is spawned
 * with fixed arguments (the URL after `--`), its destination checked like a webhook's (https only, every resolved
 * address public unless WEBHOOK_ALLOW_PRIVATE) and pinned (`http.curloptResolve`), so git connects to the address
 * that was checked. No system or user configuration, no prompts, no redirects, no other protocol; credentials
 * come from the space's encrypted environment as an HTTP header passed through git's environment configuration
 * (never in argv or logs). Time and size are capped; progress goes to the event stream `repo:<id>`.
 *
 * Durable: the clone is made in a scratch folder outside the workspace and renamed into place when complete; a
 * retried attempt (worker killed) starts the scratch folder over, and finds a destination already in place when
 * the previous attempt got that far, so the repository is cloned into the workspace once.
 */
import { spawn } from 'node:child_process';
import { lstat, mkdir, mkdtemp, readdir, rename, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { recordEvent, type EventDeps, type ServiceEventType } from '../commands/serviceEvents';
import { filesDeps, recountFiles } from '../commands/workspaceFiles';
import { withWorkspaceReservation } from '../commands/workspaceQuota';
import type { Config } from '../lib/config';
import { decryptSecret } from '../lib/crypto';
import { appendEvents, lastSeq, readEvents } from '../commands/eventLog';
import type { Logger } from '../lib/logger';
import { assertSafeUrl, resolveSafe, UnsafeDestinationError } from '../lib/safeDestination';
import { resolveInside, spaceDir } from '../lib/workspace';
import { repoStreamId, Space, WorkspaceRepo, type WorkspaceRepoDoc } from '../models';

export interface RepoActivityDeps extends EventDeps {
  logger: Logger;
  config: Readonly<Config>;
}

/** How often the clone heartbeats, checks its size and may report progress. */
const TICK_MS = 1000;

/** Appends one event to a repository's stream (one writer at a time: the workflow runs one activity at once). */
async function emit(repoId: string, event: string, data: Record<string, unknown>): Promise<void> {
  const streamId = repoStreamId(repoId);
  await appendEvents(streamId, [{ seq: (await lastSeq(streamId)) + 1, event, data: { repo_id: repoId, ...data } }]);
}

/**
 * Records a clone's service event (webhooks) once per clone: keyed by the repository, the workflow run and the
 * type, so a retried attempt records nothing new, and a clone started again after a failure (a new run) does.
 */
async function recordCloneEvent(
  deps: EventDeps,
  type: Extract<ServiceEventType, `repo.${string}`>,
  repo: WorkspaceRepoDoc,
  data: Record<string, unknown>
): Promise<void> {
  const { runId } = Context.current().info.workflowExecution!; // always run by the repoClone workflow
  await recordEvent(
    {
      type,
      organizationId: repo.organizationId,
      data: { repoId: repo._id, workspaceId: repo.spaceId, url: repo.url, path: repo.path, ...data },
      key: `repo-clone:${repo._id}:${runId}:${type}`,
    },
    deps
  );
}

async function sizeOf(dir: string): Promise<number> {
  let bytes = 0;
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else bytes += (await lstat(p).catch(() => ({ size: 0 }))).size;
    }
  };
  await walk(dir);
  return bytes;
}

/** Runs git with fixed arguments; resolves with its exit code and the tail of its stderr. */
function runGit(
  limitSeconds: number,
  args: string[],
  env: NodeJS.ProcessEnv,
  onStderr: (line: string) => void,
  signal: AbortSignal
): Promise<{ code: number | null; stderr: string; stdout: string }> {
  return new Promise((resolve, reject) => {
    // Under `timeout`: a git left behind by a killed worker still dies at the limit.
    const child = spawn('timeout', ['--signal=KILL', `${limitSeconds}s`, 'git', ...args], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      signal,
      killSignal: 'SIGTERM', // timeout passes it on to git (a SIGKILL would leave git behind)
    });
    let stderr = '';
    let stdout = '';
    let partial = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout = (stdout + c).slice(-4096)));
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      stderr = (stderr + c).slice(-4096);
      const lines = (partial + c).split(/[\r\n]/);
      partial = lines.pop() ?? '';
      lines.filter((l) => l.trim() !== '').forEach(onStderr);
    });
    child.on('error', (err) => (signal.aborted ? resolve({ code: null, stderr, stdout }) : reject(err)));
    child.on('close', (code) => resolve({ code, stderr, stdout }));
  });
}

/** git's last meaningful stderr line, for the client (credentials never reach stderr: they are a header). */
function gitMessage(stderr: string): string {
  const lines = stderr
    .split(/[\r\n]/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !/^(Cloning into|remote: (Counting|Compressing|Enumerating|Total))/.test(l));
  return (lines.at(-1) ?? 'git failed').slice(0, 500);
}

/**
 * @param deps logger and configuration.
 * @returns the clone activities.
 */
export function createRepoActivities(deps: RepoActivityDeps) {
  const log = deps.logger.child({ component: 'repos' });
  const files = filesDeps(deps.config);

  /**
   * Clones a repository into its workspace folder, once.
   * @param repoId the repository.
   * @returns its commit.
   */
  async function cloneRepo(repoId: string): Promise<{ commit: string }> {
    const ctx = Context.current();
    const repo = await WorkspaceRepo.findById(repoId).lean<WorkspaceRepoDoc>();
    if (!repo) throw ApplicationFailure.nonRetryable(`Repository ${repoId} not found`, 'RepoMissing');
    // A previous attempt recorded the clone and died before its events: only they are left to write.
    if (repo.status === 'ready' && repo.commit) return complete(repo, repo.commit);
    const ws = { organizationId: repo.organizationId, spaceId: repo.spaceId };
    const wsDir = spaceDir(deps.config.workspacesDir, ws.organizationId, ws.spaceId);
    const fail = (message: string): ApplicationFailure => ApplicationFailure.nonRetryable(message, 'CloneRefused');

    await WorkspaceRepo.updateOne({ _id: repoId }, { $set: { status: 'cloning', error: null } });
    await emit(repoId, 'clone.started', { attempt: ctx.info.attempt, url: repo.url, path: repo.path });
    await recordCloneEvent(deps, 'repo.clone_started', repo, { branch: repo.branch ?? null });

    let target: string;
    try {
      await mkdir(wsDir, { recursive: true });
      target = await resolveInside(wsDir, repo.path);
    } catch (err) {
      throw fail(err instanceof Error ? err.message : String(err));
    }
    // A previous attempt renamed the clone into place and died before recording it: it is done (its reservation,
    // if the attempt died before closing it, lapses with its lease).
    const existing = await lstat(path.join(target, '.git')).catch(() => null);
    if (!existing) {
      const entries = await readdir(target).catch(() => null);
      if (entries && entries.length > 0) {
        const where = repo.path ? `The destination ${repo.path}` : 'The workspace root';
        throw fail(`${where} exists and is not empty`);
      }
      await clone(repo, target);
    }
    const home = await mkdtemp(path.join(os.tmpdir(), 'git-home-'));
    const head = await runGit(
      60,
      ['-C', target, 'rev-parse', '--verify', 'HEAD'],
      gitEnv(home),
      () => undefined,
      ctx.cancellationSignal
    ).finally(() => rm(home, { recursive: true, force: true }));
    const commit = head.stdout.trim();
    if (head.code !== 0 || !/^[0-9a-f]{40,64}$/.test(commit)) throw fail('The clone has no HEAD commit');
    await WorkspaceRepo.updateOne(
      { _id: repoId },
      { $set: { status: 'ready', commit, clonedAt: new Date(), error: null } }
    );
    return complete(repo, commit);
  }

  /**
   * What follows a clone recorded `ready` (each step safe to repeat): the workspace's file count, then
   * `clone.completed` on the stream and `repo.clone_completed`, once each.
   */
  async function complete(repo: WorkspaceRepoDoc, commit: string): Promise<{ commit: string }> {
    await recountFiles(files.storage, { organizationId: repo.organizationId, spaceId: repo.spaceId });
    const events = await readEvents(repoStreamId(repo._id));
    if (!events.some((e) => e.event === 'clone.completed')) await emit(repo._id, 'clone.completed', { commit });
    await recordCloneEvent(deps, 'repo.clone_completed', repo, { commit });
    log.info({ repoId: repo._id, commit }, 'repository cloned');
    return { commit };
  }

  /** git's environment: no system or user configuration, no prompts; extra configuration as GIT_CONFIG_* pairs. */
  function gitEnv(home: string, config: [string, string][] = []): NodeJS.ProcessEnv {
    return {
      PATH: deps.config.childPath,
      HOME: home,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_TERMINAL_PROMPT: '0',
      GIT_ASKPASS: '',
      SSH_ASKPASS: '',
      GIT_CONFIG_COUNT: String(config.length),
      ...Object.fromEntries(
        config.flatMap(([k, v], i) => [
          [`GIT_CONFIG_KEY_${i}`, k],
          [`GIT_CONFIG_VALUE_${i}`, v],
        ])
      ),
    };
  }

  async function credentialHeader(repo: WorkspaceRepoDoc): Promise<[string, string][]> {
    if (!repo.credentialsEnv) return [];
    const space = await Space.findById(repo.spaceId).select({ environment: 1 }).lean();
    const sealed = space?.environment?.find((v) => v.name === repo.credentialsEnv)?.sealed;
    if (!sealed)
      throw ApplicationFailure.nonRetryable(
        `The space has no environment variable ${repo.credentialsEnv}`,
        'CloneRefused'
      );
    if (!deps.config.encryptionKey)
      throw ApplicationFailure.nonRetryable('ENCRYPTION_KEY is not configured', 'CloneRefused');
    const token = decryptSecret(deps.config.encryptionKey, sealed);
    const basic = Buffer.from(`x-access-token:${token}`).toString('base64');
    return [['http.extraHeader', `Authorization: Basic ${basic}`]];
  }

  async function clone(repo: WorkspaceRepoDoc, target: string): Promise<void> {
    const ctx = Context.current();
    const fail = (message: string): ApplicationFailure => ApplicationFailure.nonRetryable(message, 'CloneRefused');
    const allowPrivate = deps.config.webhookAllowPrivate;
    let url: URL;
    let pinned: string;
    try {
      url = assertSafeUrl(repo.url, { allowPrivate });
      const [first] = await resolveSafe(url.hostname, { allowPrivate });
      const address = first!.family === 6 ? `[${first!.address}]` : first!.address;
      pinned = `${url.hostname.replace(/^\[|\]$/g, '')}:${url.port || '443'}:${address}`;
    } catch (err) {
      if (err instanceof UnsafeDestinationError) {
        log.warn({ repoId: repo._id, detail: err.detail }, err.message);
        throw fail(err.message);
      }
      throw err; // DNS trouble: retried
    }
    const usage = await files.storage.usage({ organizationId: repo.organizationId, spaceId: repo.spaceId });
    const maxBytes = Math.min(deps.config.repoClone.maxBytes, deps.config.workspaceMaxBytes - usage.bytes);
    if (maxBytes <= 0) throw fail('The workspace has no room left for a clone');

    // Each attempt has its own scratch folder: the git of a worker that was killed may still be running (an orphan,
    // until its own time limit) and writing into its folder. Earlier attempts' folders are removed.
    const scratchRoot = path.join(deps.config.workspacesDir, '.clones');
    const scratch = path.join(scratchRoot, `${repo._id}-${ctx.info.attempt}`);
    await mkdir(scratchRoot, { recursive: true });
    const removeScratches = async (): Promise<void> => {
      for (const name of await readdir(scratchRoot).catch(() => [] as string[]))
        if (name.startsWith(`${repo._id}-`)) await rm(path.join(scratchRoot, name), { recursive: true, force: true });
    };
    await removeScratches();
    const home = await mkdtemp(path.join(os.tmpdir(), 'git-home-'));
    const config: [string, string][] = [
      ['http.curloptResolve', pinned],
      ['http.followRedirects', 'false'],
      ['protocol.allow', 'never'],
      ['protocol.https.allow', 'always'],
      ['core.symlinks', 'false'],
      ['credential.helper', ''],
      ...(deps.config.repoClone.caInfo
        ? ([['http.sslCAInfo', deps.config.repoClone.caInfo]] as [string, string][])
        : []),
      ...(await credentialHeader(repo)),
    ];
    const args = [
      'clone',
      '--progress',
      '--no-tags',
      '--single-branch',
      `--depth=${repo.depth ?? 1}`,
      ...(repo.branch ? [`--branch=${repo.branch}`] : []),
      '--',
      url.href,
      scratch,
    ];

    const stop = new AbortController();
    let why: string | undefined;
    const kill = (reason: string): void => {
      why ??= reason;
      stop.abort();
    };
    const onCancel = (): void => kill('cancelled');
    ctx.cancellationSignal.addEventListener('abort', onCancel);
    const deadline = setTimeout(
      () => kill(`The clone took longer than ${deps.config.repoClone.timeoutSeconds} s`),
      deps.config.repoClone.timeoutSeconds * 1000
    );
    let lastPhase = '';
    let lastReport = 0;
    // Progress events are written one after the other (each takes the next seq), and all before the clone ends.
    let progress: Promise<void> = Promise.resolve();
    const tick = setInterval(() => {
      ctx.heartbeat();
      void sizeOf(scratch).then((bytes) => {
        if (bytes > maxBytes) kill(`The clone exceeds its size limit of ${maxBytes} bytes`);
      });
    }, TICK_MS);
    try {
      const result = await runGit(
        deps.config.repoClone.timeoutSeconds + 5,
        args,
        gitEnv(home, config),
        (line) => {
          const m = /^(?:remote: )?([A-Za-z ]+):\s+(\d+)%/.exec(line);
          if (!m) return;
          const phase = m[1]!.trim();
          const now = Date.now();
          if (phase === lastPhase && now - lastReport < 500) return;
          lastPhase = phase;
          lastReport = now;
          progress = progress
            .then(() => emit(repo._id, 'clone.progress', { phase, percent: Number(m[2]) }))
            .catch(() => undefined);
        },
        stop.signal
      );
      await progress;
      if (why === 'cancelled') {
        if (ctx.cancellationDetails?.workerShutdown)
          throw ApplicationFailure.retryable('Worker shutting down', 'WorkerShutdown');
        throw new CancelledFailure('Clone cancelled');
      }
      if (why) throw fail(why);
      if (result.code !== 0) {
        const message = gitMessage(result.stderr);
        log.warn({ repoId: repo._id, code: result.code, message }, 'git clone failed');
        throw ApplicationFailure.retryable(`git clone failed: ${message}`, 'CloneFailed');
      }
      // The clone's bytes are reserved in the workspace's cap before they enter it (commands/workspaceQuota.ts): a
      // concurrent upload or clone cannot take the same room.
      const bytes = await sizeOf(scratch);
      await withWorkspaceReservation(
        files,
        { organizationId: repo.organizationId, spaceId: repo.spaceId },
        {
          bytes,
          refusal: (left) => fail(`The clone (${bytes} bytes) does not fit in the workspace (${left} bytes left)`),
        },
        async () => {
          await mkdir(path.dirname(target), { recursive: true });
          await rm(target, { recursive: true, force: true }); // an empty folder, checked above
          await rename(scratch, target);
        }
      );
    } finally {
      await progress;
      clearInterval(tick);
      clearTimeout(deadline);
      ctx.cancellationSignal.removeEventListener('abort', onCancel);
      await rm(home, { recursive: true, force: true });
      await removeScratches().catch(() => undefined);
    }
  }

  /**
   * Records a clone that failed for good (its message in the service's words) and its `clone.failed` event.
   * @param input the repository and the message.
   */
  async function failRepoClone(input: { repoId: string; message: string }): Promise<void> {
    await WorkspaceRepo.updateOne({ _id: input.repoId }, { $set: { status: 'failed', error: input.message } });
    const events = await readEvents(repoStreamId(input.repoId));
    const last = events.at(-1);
    if (last?.event !== 'clone.failed') await emit(input.repoId, 'clone.failed', { message: input.message });
    const repo = await WorkspaceRepo.findById(input.repoId).lean<WorkspaceRepoDoc>();
    if (repo) await recordCloneEvent(deps, 'repo.clone_failed', repo, { error: input.message });
  }

  return { cloneRepo, failRepoClone };
}

export type RepoActivities = ReturnType<typeof createRepoActivities>;
