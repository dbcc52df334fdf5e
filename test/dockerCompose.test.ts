/**
 * No Docker engine runs here, so the production topology is checked by reading the compose file, the Dockerfile and
 * .env.example: what restarts, what is published, credentials, pinned images, the shared workspace volume and its
 * owner, health checks that can fail, and an image of compiled JavaScript with production dependencies only. The
 * compose file is interpolated as compose does (test/helpers/compose.ts): every setting of docs/configuration.md
 * reaches the api and the worker, and MongoDB Atlas / Temporal Cloud need none of the bundled servers.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { loadConfig } from '../lib/config';
import { activeServices, interpolate, interpolateAll, RequiredVariableError } from './helpers/compose';
import { TEMPORAL_DYNAMIC_CONFIG } from '../scripts/servers/launch';
import { serviceNodeArgs } from '../scripts/lib/serviceHeap';
import { SEARCH_ATTRIBUTES } from '../workflows/searchAttributes';

const ROOT = path.resolve(__dirname, '..');
interface Service {
  image?: string;
  build?: { context: string; args?: Record<string, string> };
  profiles?: string[];
  init?: boolean;
  restart?: string;
  command?: string[];
  entrypoint?: string[];
  ports?: string[];
  environment?: Record<string, string | number>;
  depends_on?: Record<string, { condition: string; required?: boolean }>;
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
/** Services that run until stopped (all but the one-shot migrate). */
const LONG_RUNNING = ['mongo', 'postgres', 'temporal', 'temporal-ui', 'api', 'worker'];

/** `${NAME…}` references of the compose file (nested ones included), and whether compose requires the variable. */
const referenced = [...new Set([...composeText.matchAll(/\$\{([A-Z_]+)/g)].map((m) => m[1]))];
const references = referenced.map((name) => ({
  name,
  required: new RegExp(`\\$\\{${name}:\\?`).test(composeText),
}));
/** The .env of the compose steps of docs/operations.md: the required secrets, the bundled servers on. */
const DOT_ENV: Record<string, string> = {
  COMPOSE_PROFILES: 'mongo,temporal',
  ENCRYPTION_KEY: 'ab'.repeat(32),
  MONGO_ROOT_PASSWORD: 'mongo_root_password0',
  MONGO_APP_PASSWORD: 'mongo_app_password0',
  TEMPORAL_DB_PASSWORD: 'temporal_db_password0',
};

/**
 * @param value a compose environment value.
 * @param env the .env (default: those steps').
 * @returns it as compose hands it to the container.
 */
const substitute = (value: string, env: Record<string, string> = DOT_ENV): string => interpolate(value, env);

/**
 * @param service a service of the compose file.
 * @param env the .env.
 * @returns the environment its container starts with: the image's ENV (the Dockerfile's runtime stage) under the
 *   service's interpolated environment, as docker does.
 */
const containerEnv = (service: Service, env: Record<string, string>): Record<string, string> => ({
  ...(service.build ? imageEnv(interpolateAll(service.build.args ?? {}, env)) : {}),
  ...Object.fromEntries(Object.entries(service.environment ?? {}).map(([k, v]) => [k, interpolate(String(v), env)])),
});

/** The Dockerfile's stages: name (or index) → its lines. */
const stages = dockerfile
  .split(/^FROM /m)
  .slice(1)
  .map((stage) => ({ from: stage.split('\n')[0], body: stage }));

/**
 * @param args the build's arguments (compose's `build.args`).
 * @returns the runtime image's ENV (`ENV A=1 \` continued lines; `${ARG}` takes the argument's value).
 */
function imageEnv(args: Record<string, string> = {}): Record<string, string> {
  const runtime = stages.at(-1)!.body.replace(/\\\n\s*/g, ' ');
  const env: Record<string, string> = {};
  for (const line of runtime.split('\n').filter((l) => l.startsWith('ENV ')))
    for (const [, k, v] of line.slice(4).matchAll(/([A-Z_]+)=(\S*)/g))
      env[k] = v.replace(/\$\{(\w+)\}/g, (_a, arg: string) => args[arg] ?? '');
  return env;
}

/**
 * Every variable loadConfig reads (it reads only what it is given: a recording environment lists them), traces on
 * once, as the traces' own settings are read only then.
 */
const configVariables = (() => {
  const read = new Set<string>();
  for (const given of [{}, { OTEL_TRACES_EXPORTER: 'console' }] as Record<string, string>[])
    loadConfig(
      new Proxy(given, {
        get: (t, k) => {
          read.add(String(k));
          return t[String(k)];
        },
      })
    );
  read.delete('PATH'); // the programs' PATH, not a setting
  return read;
})();
/** The first column of the configuration table, docs/configuration.md ("A, B" rows name several). */
const readmeVariables = new Set(
  read('docs/configuration.md')
    .split('\n')
    .filter((l) => /^\| [A-Z]/.test(l))
    .flatMap((l) => l.split('|')[1].split(','))
    .map((v) => v.trim())
);
/** Read by loadConfig but not an operator's setting. */
const NOT_SETTINGS: Record<string, string> = {
  VALIDATE_RESPONSES: 'tests check every response body against its schema',
};
/** Settings of docs/configuration.md that do not apply to the compose stack's containers, and why. */
const NOT_IN_CONTAINERS: Record<string, string> = {
  DEV_MONGO_PORT: 'the embedded servers of `npm run dev`',
  DEV_TEMPORAL_PORT: 'the embedded servers of `npm run dev`',
  DEV_TEMPORAL_UI_PORT: 'the embedded servers of `npm run dev`',
  WORKER_PROCESSES: 'the supervisor of `npm start`; compose scales with `--scale worker=N`',
  RESTART_BACKOFF_MS: 'the supervisor of `npm start`; compose restarts containers (`restart: unless-stopped`)',
  RESTART_BACKOFF_MAX_MS: 'the supervisor of `npm start`; compose restarts containers',
  RESTART_HEALTHY_MS: 'the supervisor of `npm start`; compose restarts containers',
};
/** Set by the image or the compose file for its containers: an operator's value would break them. */
const FIXED = [
  'NODE_ENV',
  'HOST',
  'PORT',
  'DATA_DIR',
  'WORKSPACES_DIR',
  'MEDIA_DIR',
  'WORKER_HEALTH_FILE',
  'WORKFLOW_BUNDLE',
];

describe('docker-compose.yml', () => {
  it('has the production services', () => {
    expect(Object.keys(s).sort()).toEqual(['api', 'migrate', 'mongo', 'postgres', 'temporal', 'temporal-ui', 'worker']);
    expect(s.mongo.entrypoint?.join(' ')).toMatch(/mongod --replSet rs0 /);
    expect(s.temporal.image).toMatch(/^temporalio\/auto-setup:/);
    expect(s['temporal-ui'].image).toMatch(/^temporalio\/ui:/);
    expect(s.api.build?.context).toBe('.');
    expect(s.worker.build?.context).toBe('.');
    expect(s.api.image).toBe(s.worker.image); // one image, two commands
  });

  it('every long-running service restarts unless stopped; the one-shot migrate does not', () => {
    for (const name of LONG_RUNNING) expect([name, s[name].restart]).toEqual([name, 'unless-stopped']);
    expect(s.migrate.restart).toBe('no');
  });

  it("publishes only the api, on the host's loopback unless .env says otherwise; anything else on the loopback at most", () => {
    expect(s.api.ports?.map((p) => substitute(p))).toEqual(['127.0.0.1:3000:3000']);
    expect(s.api.ports?.map((p) => substitute(p, { ...DOT_ENV, API_PUBLISH_ADDRESS: '0.0.0.0' }))).toEqual([
      '0.0.0.0:3000:3000',
    ]);
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
    expect(env.MONGO_INITDB_ROOT_PASSWORD).toBe('${MONGO_ROOT_PASSWORD:-}');
    expect(env.MONGO_APP_PASSWORD).toBe('${MONGO_APP_PASSWORD:-}');
    // Compose cannot require them only while the profile is on, so the container refuses to start without them.
    expect(s.mongo.entrypoint?.join(' ')).toMatch(
      /^bash -c \[ -n "\$\$MONGO_INITDB_ROOT_PASSWORD" \] && \[ -n "\$\$MONGO_APP_PASSWORD" \] \|\|\s+\{ echo '[^']+' >&2; exit 1; \};/
    );
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
    // The service's own key is always required; the bundled servers' passwords while their profile is on.
    expect(references.filter((r) => r.required).map((r) => r.name)).toEqual(['ENCRYPTION_KEY']);
    expect(() => interpolateAll(compose, { ...DOT_ENV, ENCRYPTION_KEY: '' })).toThrow(RequiredVariableError);
    expect(s.postgres.environment?.POSTGRES_PASSWORD).toBe('${TEMPORAL_DB_PASSWORD:-}'); // the image refuses none
    for (const secret of ['MONGO_ROOT_PASSWORD', 'MONGO_APP_PASSWORD', 'TEMPORAL_DB_PASSWORD'])
      expect(envExample).toMatch(new RegExp(`^${secret}=$`, 'm'));
  });

  it(".env.example names every compose-only variable the file reads (docs/configuration.md the service's), and .env is never committed", () => {
    const documented = new Set([...envExample.matchAll(/^#? ?([A-Z_]+)=/gm)].map((m) => m[1]));
    for (const { name, required } of references) {
      if (configVariables.has(name)) expect([name, readmeVariables.has(name)]).toEqual([name, true]);
      else expect([name, documented.has(name)]).toEqual([name, true]);
      if (required) expect(envExample).toMatch(new RegExp(`^${name}=`, 'm'));
    }
    expect(envExample).toMatch(/^COMPOSE_PROFILES=mongo,temporal$/m);
    expect(read('.gitignore').split('\n')).toContain('.env');
    expect(read('.dockerignore').split('\n')).toContain('.env');
  });

  it("the api's and the worker's environment is a valid configuration of the service", () => {
    for (const name of ['api', 'worker']) {
      const config = loadConfig(containerEnv(s[name], DOT_ENV));
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
    // The heap limit `npm start` gives its service processes (scripts/lib/serviceHeap.ts).
    expect(s.api.command).toEqual(['node', ...serviceNodeArgs({}), 'dist/worker/service.js']);
    expect(s.worker.command).toEqual(['node', ...serviceNodeArgs({}), 'dist/worker/index.js']);
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
    expect(s.api.command).toEqual(['node', ...serviceNodeArgs({}), 'dist/worker/service.js']);
    expect(s.api.healthcheck?.test).toEqual(['CMD', 'node', 'dist/scripts/healthcheck.js', 'api', 'worker']);
    expect(s.api.environment?.WORKER_HEALTH_FILE).toBeTruthy();
    expect(existsSync(path.join(ROOT, 'scripts/healthcheck.ts'))).toBe(true);
    // Not required: with Atlas or Temporal Cloud the bundled servers are not started (their profile is off).
    const servers = {
      mongo: { condition: 'service_healthy', required: false },
      temporal: { condition: 'service_healthy', required: false },
    };
    expect(s.migrate.depends_on).toEqual(servers);
    // The api and the worker start once `admin migrate` succeeded, whichever servers they use.
    for (const name of ['api', 'worker'])
      expect(s[name].depends_on).toEqual({
        ...servers,
        migrate: { condition: 'service_completed_successfully' },
      });
    expect(s.temporal.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
  });

  it('a one-shot `admin migrate` (indexes and search attributes) with the environment of the api, in the namespace of TEMPORAL_NAMESPACE', () => {
    // The same image and settings as the api: the admin CLI's migrate (test/scripts/migrate.test.ts) creates the
    // indexes and registers SEARCH_ATTRIBUTES, the ones the dev server registers, in the configured namespace.
    expect(s.migrate.command).toEqual(['node', 'dist/scripts/admin.js', 'migrate']);
    expect(s.migrate.image).toBe(s.api.image);
    expect(s.migrate.build).toEqual(s.api.build);
    expect(s.migrate.profiles).toBeUndefined(); // with Atlas and Temporal Cloud as well
    expect(s.migrate.ports).toBeUndefined();
    expect(s.migrate.volumes).toEqual([]);
    expect(containerEnv(s.migrate, DOT_ENV)).toEqual(containerEnv(s.api, DOT_ENV));
    expect(Object.values(SEARCH_ATTRIBUTES).every((type) => type === 'Keyword')).toBe(true);
    const env = { ...DOT_ENV, TEMPORAL_NAMESPACE: 'ops' };
    expect(loadConfig(containerEnv(s.migrate, env))).toMatchObject({ nodeEnv: 'production', temporalNamespace: 'ops' });
    expect(substitute(String(s.temporal.environment?.DEFAULT_NAMESPACE), env)).toBe('ops'); // made at its first start
    expect(loadConfig(containerEnv(s.api, env)).temporalNamespace).toBe('ops');
  });

  it('the configuration table of docs/configuration.md is every setting lib/config.ts reads, and each reaches the api and the worker from .env', () => {
    // The table and the code name the same variables.
    const settings = [...configVariables].filter((v) => !(v in NOT_SETTINGS)).sort();
    expect([...readmeVariables].sort()).toEqual(settings);
    // Every one an operator may set in .env arrives in both containers, as written (a distinct value per variable).
    const passed = settings.filter((v) => !(v in NOT_IN_CONTAINERS) && !FIXED.includes(v));
    expect(passed.length).toBeGreaterThan(60);
    const env = { ...DOT_ENV, ...Object.fromEntries(passed.map((v) => [v, `value-of-${v}`])) };
    for (const name of ['api', 'worker']) {
      const got = containerEnv(s[name], env);
      expect(passed.filter((v) => got[v] !== `value-of-${v}`)).toEqual([]);
      // Unset in .env: the service's own default (an empty value is unset for lib/config.ts).
      const unset = containerEnv(s[name], DOT_ENV);
      expect(loadConfig(unset)).toMatchObject({
        executionAdmission: { concurrency: 20, queue: 200, waitMs: 20_000 },
        observability: { codecCorsOrigins: expect.any(Array) },
        rateLimitRequests: 900,
      });
      // The fixed ones are the container's, whatever .env says.
      const fixed = containerEnv(s[name], { ...DOT_ENV, ...Object.fromEntries(FIXED.map((v) => [v, 'x'])) });
      for (const v of FIXED) expect([v, fixed[v]]).toEqual([v, expect.not.stringMatching(/^x?$/)]);
    }
    // A real configuration: /metrics, SDK metrics and traces on from .env, as docs/operations.md "Operating it" says.
    const ops = containerEnv(s.api, {
      ...DOT_ENV,
      METRICS_TOKEN: 'm'.repeat(20),
      TEMPORAL_METRICS_PORT: '9464',
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      DEFAULT_MODEL: 'claude-x',
      EXECUTION_CONCURRENCY: '7',
    });
    expect(loadConfig(ops)).toMatchObject({
      defaultModel: 'claude-x',
      executionAdmission: { concurrency: 7 },
      observability: {
        metricsToken: 'm'.repeat(20),
        temporalMetricsPort: 9464,
        tracing: { exporter: 'otlp', endpoint: 'http://collector:4318/v1/traces' },
      },
    });
  });

  it('MongoDB Atlas and Temporal Cloud: no bundled server starts and none of its secrets is needed', () => {
    const cloud = {
      COMPOSE_PROFILES: '',
      ENCRYPTION_KEY: 'cd'.repeat(32),
      MONGODB_URI: 'mongodb+srv://agent_service:pw@cluster0.abcde.mongodb.net/agent_service?retryWrites=true',
      TEMPORAL_ADDRESS: 'us-east-1.aws.api.temporal.io:7233',
      TEMPORAL_NAMESPACE: 'prod.a1b2c',
      TEMPORAL_API_KEY: 'key',
    };
    // Compose reads every service's variables before it applies profiles: none of the bundled ones may be required.
    const resolved = interpolateAll(compose, cloud);
    expect(activeServices(resolved.services, []).sort()).toEqual(['api', 'migrate', 'worker']);
    for (const name of ['api', 'worker', 'migrate']) {
      // Dependencies on services that do not start are skipped (required: false), not an error; migrate starts.
      for (const [dep, { required }] of Object.entries(s[name].depends_on ?? {}))
        expect([dep, required]).toEqual([dep, dep === 'migrate' ? undefined : false]);
      const config = loadConfig(containerEnv(s[name], cloud));
      expect(config).toMatchObject({
        mongodbUri: cloud.MONGODB_URI,
        temporalAddress: cloud.TEMPORAL_ADDRESS,
        temporalNamespace: 'prod.a1b2c',
        temporalApiKey: 'key',
        temporalTls: expect.any(Object),
      });
    }
    // The bundled stack: every service, and the api reaches the bundled servers.
    expect(activeServices(s, ['mongo', 'temporal']).sort()).toEqual(Object.keys(s).sort());
    expect(activeServices(s, ['temporal']).sort()).toEqual(
      Object.keys(s)
        .filter((n) => n !== 'mongo')
        .sort()
    );
    const bundled = loadConfig(containerEnv(s.api, DOT_ENV));
    expect(new URL(bundled.mongodbUri!).host).toBe('mongo:27017');
    expect(bundled.temporalAddress).toBe('temporal:7233');
  });

  it("api and worker run under an init process (git's children are reaped) and their image carries its commit", () => {
    for (const name of ['api', 'worker']) {
      expect(s[name].init).toBe(true);
      expect(s[name].build?.args).toEqual({ GIT_COMMIT: '${GIT_COMMIT:-}' });
    }
    const commit = 'a'.repeat(40);
    expect(loadConfig({ ...imageEnv(), ENCRYPTION_KEY: DOT_ENV.ENCRYPTION_KEY, GIT_COMMIT: commit }).gitCommit).toBe(
      commit
    ); // the build arg's value
    expect(stages.at(-1)!.body).toMatch(/^ARG GIT_COMMIT=$/m);
    expect(imageEnv()).toHaveProperty('GIT_COMMIT');
    expect(stages.at(-1)!.body).toContain('GIT_COMMIT=${GIT_COMMIT}');
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

  it("has a HEALTHCHECK for its default command (`npm start`: the api and every worker's health file)", () => {
    expect(runtime.body).toMatch(
      /^HEALTHCHECK --interval=\d+s --timeout=\d+s --start-period=\d+s --retries=\d+ \\\n {2}CMD \["node", "dist\/scripts\/healthcheck\.js", "api", "worker"\]$/m
    );
    expect(imageEnv().WORKER_HEALTH_FILE).toBe('/tmp/worker-health.json');
  });

  it('has git (repository clones) and runs as an unprivileged user', () => {
    expect(runtime.body).toMatch(/apt-get install -y --no-install-recommends git ca-certificates/);
    expect(runtime.body).toMatch(/^USER node$/m);
  });

  it('targets Node 24 LTS, the version .nvmrc pins; engines names what is tested (24 in CI and the image, 20.19+ still accepted)', () => {
    // .nvmrc is the one place of the pinned version (scripts/pinned-node.sh, scripts/lib/pinnedNode.ts).
    expect(read('.nvmrc').trim()).toMatch(/^24\.\d+\.\d+$/);
    expect(dockerfile).toContain(`ARG NODE_IMAGE=node:${read('.nvmrc').trim()}-bookworm-slim`);
    const engines = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node;
    expect(engines).toBe('^20.19.0 || ^24.0.0');
  });
});
