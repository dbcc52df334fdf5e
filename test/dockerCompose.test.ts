/**
 * No Docker engine runs here, so the production topology is checked by reading the compose file.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { TEMPORAL_DYNAMIC_CONFIG } from '../scripts/servers/launch';
import { SEARCH_ATTRIBUTES } from '../workflows/searchAttributes';

const ROOT = path.resolve(__dirname, '..');
interface Service {
  image?: string;
  build?: string;
  command?: string[];
  ports?: string[];
  environment?: Record<string, string | number>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  volumes?: string[];
}
const compose = parse(readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};
const s = compose.services;

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
    expect(s.mongo.image).toBe('mongo:7');
    expect(s.mongo.command).toEqual(expect.arrayContaining(['--replSet', 'rs0']));
    expect(s.temporal.image).toMatch(/^temporalio\/auto-setup:/);
    expect(s['temporal-ui'].image).toMatch(/^temporalio\/ui:/);
    expect(s.api.build).toBe('.');
    expect(s.worker.build).toBe('.');
  });

  it('every long-running service has a healthcheck, and dependants wait for health', () => {
    for (const name of ['mongo', 'postgres', 'temporal', 'api', 'worker'])
      expect(s[name].healthcheck?.test.length).toBeGreaterThan(0);
    for (const name of ['api', 'worker']) {
      expect(s[name].depends_on).toEqual({
        mongo: { condition: 'service_healthy' },
        temporal: { condition: 'service_healthy' },
        'temporal-setup': { condition: 'service_completed_successfully' },
      });
    }
    expect(s.temporal.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    expect(s.api.healthcheck?.test.join(' ')).toContain('/readyz');
  });

  it('wires api and worker to the same servers through the documented variables', () => {
    for (const name of ['api', 'worker']) {
      const env = s[name].environment ?? {};
      expect(env.MONGODB_URI).toBe('mongodb://mongo:27017/agent_service?replicaSet=rs0');
      expect(env.TEMPORAL_ADDRESS).toBe('temporal:7233');
      expect(env.TEMPORAL_NAMESPACE).toBe('default');
      expect(env.NODE_ENV).toBe('production');
      expect(String(env.ENCRYPTION_KEY)).toContain('ENCRYPTION_KEY');
    }
    expect(s.api.command).toEqual(['node', 'dist/api/server.js']);
    expect(s.worker.command).toEqual(['node', 'dist/worker/index.js']);
  });

  it('publishes the expected ports', () => {
    expect(s.api.ports).toEqual(['3000:3000']);
    expect(s.temporal.ports).toEqual(['7233:7233']);
    expect(s['temporal-ui'].ports).toEqual(['8080:8080']);
    expect(s.mongo.ports).toEqual(['27017:27017']);
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

  it('the Dockerfile builds the compiled entrypoints the services run', () => {
    const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/RUN npm ci/);
    expect(dockerfile).toMatch(/npm run build/);
    expect(dockerfile).toMatch(/COPY --from=build \/app\/dist/);
  });
});
