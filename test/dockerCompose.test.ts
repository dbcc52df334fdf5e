/**
 * No Docker engine runs here, so the production topology is checked by reading the compose file, the Dockerfile and
 * .env.example: what restarts, what is published, credentials, pinned images, the shared workspace volume and its
 * owner, health checks that can fail, and an image of compiled JavaScript with production dependencies only.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { loadConfig } from '../lib/config';
import { TEMPORAL_DYNAMIC_CONFIG } from '../scripts/servers/launch';
import { SEARCH_ATTRIBUTES } from '../workflows/searchAttributes';

const ROOT = path.resolve(__dirname, '..');
interface Service {
  image?: string;
  build?: string;
  restart?: string;
  command?: string[];
  entrypoint?: string[];
  ports?: string[];
  environment?: Record<string, string | number>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  volumes?: string[];
}
const read = (file: string): string => readFileSync(path.join(ROOT, file), 'utf8');
const composeText = read('docker-compose.yml');
const compose = parse(composeText, { merge: true }) as {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
};
const s = compose.services;
const dockerfile = read('Dockerfile');
const envExample = read('.env.example');
/** Services that run until stopped (all but the one-shot setup). */
const LONG_RUNNING = ['mongo', 'postgres', 'temporal', 'temporal-ui', 'api', 'worker'];

/** `${NAME…}` references of the compose file, with their form. */
const references = [...composeText.matchAll(/\$\{([A-Z_]+)(:[-?][^}]*)?\}/g)].map((m) => ({
  name: m[1],
  required: m[2]?.startsWith(':?') ?? false,
  fallback: m[2]?.startsWith(':-') ? m[2].slice(2) : undefined,
}));

/**
 * @param value a compose environment value.
 * @returns it with every `${…}` replaced as compose would for an .env that sets the required ones.
 */
const substitute = (value: string): string =>
  value.replace(/\$\{([A-Z_]+)(?::([-?])([^}]*))?\}/g, (_all, name: string, kind?: string, rest?: string) =>
    kind === '-' ? (rest ?? '') : name === 'ENCRYPTION_KEY' ? 'ab'.repeat(32) : `${name.toLowerCase()}0`
  );

/** The Dockerfile's stages: name (or index) → its lines. */
const stages = dockerfile
  .split(/^FROM /m)
  .slice(1)
  .map((stage) => ({ from: stage.split('\n')[0], body: stage }));

describe('docker-compose.yml', () => {
  it('has the production services', () => {
    expect(Object.keys(s).sort()).toEqual([
      'api',
      'mongo',
      'postgres',
      'temporal',
      'temporal-setup',
      'temporal-ui',
      'worker',
    ]);
    expect(s.mongo.entrypoint?.join(' ')).toMatch(/mongod --replSet rs0 /);
    expect(s.temporal.image).toMatch(/^temporalio\/auto-setup:/);
    expect(s['temporal-ui'].image).toMatch(/^temporalio\/ui:/);
    expect(s.api.build).toBe('.');
    expect(s.worker.build).toBe('.');
    expect(s.api.image).toBe(s.worker.image); // one image, two commands
  });

  it('every long-running service restarts unless stopped; the one-shot setup does not', () => {
    for (const name of LONG_RUNNING) expect([name, s[name].restart]).toEqual([name, 'unless-stopped']);
    expect(s['temporal-setup'].restart).toBe('no');
  });

  it('publishes only the api; anything else is on the host loopback at most', () => {
    expect(s.api.ports).toEqual(['3000:3000']);
    for (const [name, service] of Object.entries(s)) {
      if (name === 'api') continue;
      for (const port of service.ports ?? [])
        expect([name, port]).toEqual([name, expect.stringMatching(/^127\.0\.0\.1:/)]);
    }
    for (const name of ['mongo', 'postgres', 'temporal']) expect(s[name].ports).toBeUndefined();
  });

  it('every image is pinned to an exact release, never a floating tag', () => {
    // major.minor.patch; PostgreSQL's releases are major.minor (16.13).
    const exact = /^([\w./-]+:\d+\.\d+\.\d+(-[\w.-]+)?|postgres:\d+\.\d+)$/;
    for (const [name, service] of Object.entries(s)) {
      if (service.build) continue;
      expect([name, service.image]).toEqual([name, expect.stringMatching(exact)]);
    }
    for (const stage of stages)
      expect(stage.from).toMatch(/^(\$\{NODE_IMAGE\}|[\w./-]+:\d+\.\d+\.\d+[\w.-]*)( AS \w+)?$/);
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:24\.\d+\.\d+-bookworm-slim$/m);
  });

  it('MongoDB requires authentication: root and service accounts from .env, the service with its own account', () => {
    const env = s.mongo.environment ?? {};
    expect(env.MONGO_INITDB_ROOT_USERNAME).toBeDefined();
    expect(env.MONGO_INITDB_ROOT_PASSWORD).toBe('${MONGO_ROOT_PASSWORD:?set MONGO_ROOT_PASSWORD in .env}');
    expect(s.mongo.entrypoint?.join(' ')).toContain('--keyFile'); // a replica set with authentication needs one
    expect(s.mongo.healthcheck?.test.join(' ')).toContain('-u "$$MONGO_INITDB_ROOT_USERNAME"');
    const init = s.mongo.volumes?.find((v) => v.includes('/docker-entrypoint-initdb.d/'));
    const script = readFileSync(path.join(ROOT, init!.split(':')[0]), 'utf8');
    expect(script).toContain("roles: [{ role: 'readWrite', db: 'agent_service' }]");
    for (const name of ['api', 'worker']) {
      const uri = new URL(substitute(String(s[name].environment?.MONGODB_URI)));
      expect(uri.username).toBe('agent_service');
      expect(uri.password).toBe('mongo_app_password0');
      expect(uri.searchParams.get('authSource')).toBe('admin');
      expect(uri.searchParams.get('replicaSet')).toBe('rs0');
      expect(uri.pathname).toBe('/agent_service');
    }
  });

  it('no secret is written in the file: each comes from .env, required ones refuse to start without it', () => {
    const secret = /PASSWORD|PWD|SECRET|_KEY$|API_KEY|TLS_KEY/;
    for (const [name, service] of Object.entries(s)) {
      for (const [variable, value] of Object.entries(service.environment ?? {})) {
        if (!secret.test(variable)) continue;
        expect([name, variable, String(value)]).toEqual([
          name,
          variable,
          expect.stringMatching(/^\$\{[A-Z_]+(:[-?].*)?\}$/),
        ]);
      }
    }
    for (const required of ['ENCRYPTION_KEY', 'MONGO_ROOT_PASSWORD', 'MONGO_APP_PASSWORD', 'TEMPORAL_DB_PASSWORD'])
      expect(references.filter((r) => r.name === required).every((r) => r.required)).toBe(true);
  });

  it('.env.example names every variable the file reads (required ones uncommented), and .env is never committed', () => {
    const documented = new Set([...envExample.matchAll(/^#? ?([A-Z_]+)=/gm)].map((m) => m[1]));
    for (const { name, required } of references) {
      expect([name, documented.has(name)]).toEqual([name, true]);
      if (required) expect(envExample).toMatch(new RegExp(`^${name}=`, 'm'));
    }
    expect(read('.gitignore').split('\n')).toContain('.env');
    expect(read('.dockerignore').split('\n')).toContain('.env');
  });

  it("the api's and the worker's environment is a valid configuration of the service", () => {
    for (const name of ['api', 'worker']) {
      const env = Object.fromEntries(
        Object.entries(s[name].environment ?? {}).map(([k, v]) => [k, substitute(String(v))])
      );
      const config = loadConfig(env);
      expect(config).toMatchObject({
        nodeEnv: 'production',
        host: '0.0.0.0',
        temporalAddress: 'temporal:7233',
        temporalNamespace: 'default',
        workspacesDir: '/data/workspaces',
        workerHealthFile: '/tmp/worker-health.json',
      });
      expect(config.temporalTls).toBeUndefined();
    }
    expect(s.api.command).toEqual(['node', 'dist/worker/service.js']);
    expect(s.worker.command).toEqual(['node', 'dist/worker/index.js']);
  });

  it('api and worker share one workspace volume and one media volume, created from directories the image gives its user', () => {
    const workspaces = String(s.api.environment?.WORKSPACES_DIR);
    const media = String(s.api.environment?.MEDIA_DIR);
    for (const name of ['api', 'worker'])
      expect(s[name].volumes).toEqual([`workspaces:${workspaces}`, `media:${media}`]);
    expect(compose.volumes).toHaveProperty('workspaces');
    expect(compose.volumes).toHaveProperty('media');
    expect(stages.at(-1)!.body).toMatch(new RegExp(`mkdir -p [^\\n]*${media}[^\\n]*&& chown`));
    expect(stages.at(-1)!.body).toContain(`MEDIA_DIR=${media}`);
    const runtime = stages.at(-1)!.body;
    const user = /^USER (\w+)$/m.exec(runtime)?.[1];
    expect(user).toBe('node');
    // A named volume starts as a copy of the image's directory, owner included.
    expect(runtime).toMatch(new RegExp(`mkdir -p [^\\n]*${workspaces}[^\\n]*&& chown -R ${user}:${user} /data`));
    expect(runtime).toContain(`WORKSPACES_DIR=${workspaces}`);
  });

  it('health checks that can fail: every long-running service, the worker on its polling, the api on /readyz and its own worker', () => {
    for (const name of LONG_RUNNING)
      expect([name, s[name].healthcheck?.test.length]).toEqual([name, expect.any(Number)]);
    expect(s.worker.healthcheck?.test).toEqual(['CMD', 'node', 'dist/scripts/healthcheck.js', 'worker']);
    expect(s.worker.environment?.WORKER_HEALTH_FILE).toBeTruthy();
    // The api service runs the service process (HTTP and a worker): both parts are checked.
    expect(s.api.command).toEqual(['node', 'dist/worker/service.js']);
    expect(s.api.healthcheck?.test).toEqual(['CMD', 'node', 'dist/scripts/healthcheck.js', 'api', 'worker']);
    expect(s.api.environment?.WORKER_HEALTH_FILE).toBeTruthy();
    expect(existsSync(path.join(ROOT, 'scripts/healthcheck.ts'))).toBe(true);
    for (const name of ['api', 'worker']) {
      expect(s[name].depends_on).toEqual({
        mongo: { condition: 'service_healthy' },
        temporal: { condition: 'service_healthy' },
        'temporal-setup': { condition: 'service_completed_successfully' },
      });
    }
    expect(s.temporal.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
  });

  it('registers the same search attributes as the dev server', () => {
    const script = String(s['temporal-setup'].command);
    for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) {
      expect(script).toContain(name);
      expect(type).toBe('Keyword'); // the setup script registers Keyword attributes
    }
    expect(s['temporal-setup'].depends_on).toEqual({ temporal: { condition: 'service_healthy' } });
  });

  it('gives Temporal the same dynamic configuration as the dev server', () => {
    const temporal = s.temporal;
    const file = String(temporal.environment?.DYNAMIC_CONFIG_FILE_PATH);
    const mount = (temporal.volumes ?? []).find((v) => v.split(':')[1] === `/etc/temporal/${file}`);
    expect(mount).toBeDefined();
    const values = parse(readFileSync(path.join(ROOT, mount!.split(':')[0]), 'utf8')) as Record<
      string,
      Array<{ value: unknown }>
    >;
    expect(Object.fromEntries(Object.entries(values).map(([key, [first]]) => [key, first.value]))).toEqual(
      TEMPORAL_DYNAMIC_CONFIG
    );
  });
});

describe('Dockerfile', () => {
  const [build, deps, runtime] = stages;

  it('builds in the first stage and runs compiled JavaScript with production dependencies only', () => {
    expect(stages).toHaveLength(3);
    expect(build.from).toMatch(/ AS build$/);
    expect(build.body).toMatch(/RUN npm ci /);
    expect(build.body).toMatch(/npm run build/);
    expect(build.body).toContain("bundleWorkflowsTo('dist/workflow-bundle.js')");
    expect(deps.from).toMatch(/ AS deps$/);
    expect(deps.body).toMatch(/RUN npm ci --omit=dev /);
    expect(runtime.body).toContain('COPY --from=deps /app/node_modules ./node_modules');
    expect(runtime.body).toContain('COPY --from=build /app/dist ./dist');
    // The console's built files (npm run build builds them; their toolchain stays in the build stage).
    expect(build.body).toContain('COPY console ./console');
    expect(runtime.body).toContain('COPY --from=build /app/console/dist ./console/dist');
    expect(runtime.body).not.toMatch(/--from=build \/app\/node_modules/);
    expect(runtime.body).toContain('WORKFLOW_BUNDLE=/app/dist/workflow-bundle.js');
    expect(runtime.body).toMatch(/^CMD \["node", "dist\/scripts\/start\.js"\]$/m);
    // Every compiled entrypoint the image and the compose file name has its source.
    for (const entry of [
      'api/server',
      'worker/index',
      'worker/service',
      'scripts/start',
      'scripts/admin',
      'scripts/healthcheck',
    ])
      expect(existsSync(path.join(ROOT, `${entry}.ts`))).toBe(true);
  });

  it('has git (repository clones) and runs as an unprivileged user', () => {
    expect(runtime.body).toMatch(/apt-get install -y --no-install-recommends git ca-certificates/);
    expect(runtime.body).toMatch(/^USER node$/m);
  });

  it('targets Node 24 LTS like .nvmrc; engines names what is tested (20 here, 24 in the image)', () => {
    expect(read('.nvmrc').trim()).toBe('24');
    const engines = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node;
    expect(engines).toBe('^20.19.0 || ^24.0.0');
  });
});
