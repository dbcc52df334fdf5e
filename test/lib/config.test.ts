import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../lib/config';
import { nextAttemptInMs, retryScheduleMs } from '../../workflows/webhookPolicy';

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      port: 3000,
      host: '127.0.0.1',
      appUrl: 'http://127.0.0.1:3000',
      temporalNamespace: 'default',
      temporalTaskQueue: 'agent-service',
      webhookAllowPrivate: false,
      logLevel: 'info',
      bodyLimitBytes: 1048576,
      modelIdleTimeoutSeconds: 60,
      executionDeadlineSeconds: 600,
    });
    expect(c.mongodbUri).toBeUndefined();
    expect(c.defaultModel).toBeUndefined();
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('reads the workspace size caps (defaults 100 MiB per file, 1 GiB per workspace) and refuses bad ones', () => {
    expect(loadConfig({})).toMatchObject({ workspaceFileMaxBytes: 104857600, workspaceMaxBytes: 1073741824 });
    expect(loadConfig({ WORKSPACE_FILE_MAX_BYTES: '10', WORKSPACE_MAX_BYTES: '20' })).toMatchObject({
      workspaceFileMaxBytes: 10,
      workspaceMaxBytes: 20,
    });
    expect(() => loadConfig({ WORKSPACE_FILE_MAX_BYTES: '0', WORKSPACE_MAX_BYTES: 'lots' })).toThrow(
      /WORKSPACE_FILE_MAX_BYTES="0"[\s\S]*WORKSPACE_MAX_BYTES="lots"/
    );
  });

  it('reads and normalises valid values', () => {
    const key = 'ab'.repeat(32);
    const c = loadConfig({
      PORT: '8080',
      APP_URL: 'https://agents.example.com/',
      MONGODB_URI: 'mongodb://db:27017/x',
      TEMPORAL_ADDRESS: 'temporal:7233',
      ENCRYPTION_KEY: key,
      WEBHOOK_ALLOW_PRIVATE: 'true',
    });
    expect(c.port).toBe(8080);
    expect(c.appUrl).toBe('https://agents.example.com');
    expect(c.encryptionKey?.toString('hex')).toBe(key);
    expect(c.webhookAllowPrivate).toBe(true);
  });

  it('reports every bad value at once', () => {
    let err: unknown;
    try {
      loadConfig({
        PORT: 'abc',
        LOG_LEVEL: 'loud',
        MONGODB_URI: 'http://x',
        TEMPORAL_ADDRESS: 'nope',
        ENCRYPTION_KEY: 'short',
        WEBHOOK_ALLOW_PRIVATE: 'maybe',
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const problems = (err as ConfigError).problems;
    expect(problems).toHaveLength(6);
    expect(problems.map((p) => p.split(/[=:]/)[0])).toEqual(
      expect.arrayContaining([
        'PORT',
        'LOG_LEVEL',
        'MONGODB_URI',
        'TEMPORAL_ADDRESS',
        'ENCRYPTION_KEY',
        'WEBHOOK_ALLOW_PRIVATE',
      ])
    );
  });

  it('reads the model idle timeout and the execution deadline, in whole seconds', () => {
    const c = loadConfig({ MODEL_IDLE_TIMEOUT_SECONDS: '2', EXECUTION_DEADLINE_SECONDS: '30' });
    expect(c).toMatchObject({ modelIdleTimeoutSeconds: 2, executionDeadlineSeconds: 30 });
    expect(() => loadConfig({ MODEL_IDLE_TIMEOUT_SECONDS: '0' })).toThrow(/MODEL_IDLE_TIMEOUT_SECONDS="0"/);
    expect(() => loadConfig({ EXECUTION_DEADLINE_SECONDS: '1.5' })).toThrow(/EXECUTION_DEADLINE_SECONDS="1.5"/);
  });

  it("reads USAGE_SAVE_MS, the periodic save of a running reply's token counts (default 500 ms)", () => {
    expect(loadConfig({})).toMatchObject({ usageSaveMs: 500 });
    expect(loadConfig({ USAGE_SAVE_MS: '2000' })).toMatchObject({ usageSaveMs: 2000 });
    expect(() => loadConfig({ USAGE_SAVE_MS: '10' })).toThrow(/USAGE_SAVE_MS="10"/);
  });

  it('outage and restart timings: defaults, values, and a maximum below the first wait refused', () => {
    expect(loadConfig({})).toMatchObject({
      dependencyTimeoutMs: 3000,
      restart: { initialMs: 500, maxMs: 10_000, healthyMs: 60_000 },
    });
    expect(
      loadConfig({
        DEPENDENCY_TIMEOUT_MS: '1500',
        RESTART_BACKOFF_MS: '100',
        RESTART_BACKOFF_MAX_MS: '400',
        RESTART_HEALTHY_MS: '1000',
      })
    ).toMatchObject({ dependencyTimeoutMs: 1500, restart: { initialMs: 100, maxMs: 400, healthyMs: 1000 } });
    expect(() => loadConfig({ RESTART_BACKOFF_MS: '2000', RESTART_BACKOFF_MAX_MS: '1000' })).toThrow(
      'RESTART_BACKOFF_MAX_MS=1000: must be at least RESTART_BACKOFF_MS (2000)'
    );
    expect(() => loadConfig({ DEPENDENCY_TIMEOUT_MS: '0' })).toThrow(/DEPENDENCY_TIMEOUT_MS="0": must be an integer/);
  });

  it('a webhook attempt times out after 10 s unless WEBHOOK_TIMEOUT_MS says otherwise (100 ms to 15 s)', () => {
    expect(loadConfig({}).webhookTimeoutMs).toBe(10_000);
    expect(loadConfig({ WEBHOOK_TIMEOUT_MS: '1500' }).webhookTimeoutMs).toBe(1500);
    for (const bad of ['99', '15001', '2s'])
      expect(() => loadConfig({ WEBHOOK_TIMEOUT_MS: bad })).toThrow(
        `WEBHOOK_TIMEOUT_MS="${bad}": must be an integer between 100 and 15000`
      );
  });

  it('webhook long tail: 30s,5m,30m,2h,6h for 3 days, disabled after a day; the schedule keeps the spec’s four', () => {
    const { webhookRetry } = loadConfig({});
    expect(webhookRetry).toEqual({
      tailMs: [30_000, 300_000, 1_800_000, 7_200_000, 21_600_000],
      forMs: 3 * 86_400_000,
      disableAfterMs: 86_400_000,
    });
    const waits = retryScheduleMs(webhookRetry.tailMs, webhookRetry.forMs);
    expect(waits.slice(0, 9)).toEqual([0, 1000, 2000, 4000, 30_000, 300_000, 1_800_000, 7_200_000, 21_600_000]);
    expect(waits.slice(8).every((w) => w === 21_600_000)).toBe(true);
    expect(waits).toHaveLength(19); // 20 attempts
    expect(waits.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(3 * 86_400_000);
    // Shortened (tests), and no tail at all when WEBHOOK_RETRY_FOR leaves no room past the spec's 7 s.
    const short = loadConfig({ WEBHOOK_RETRY_TAIL: '2s', WEBHOOK_RETRY_FOR: '15s', WEBHOOK_DISABLE_AFTER: '30s' });
    expect(retryScheduleMs(short.webhookRetry.tailMs, short.webhookRetry.forMs)).toEqual([
      0, 1000, 2000, 4000, 2000, 2000, 2000, 2000,
    ]);
    expect(short.webhookRetry.disableAfterMs).toBe(30_000);
    expect(retryScheduleMs([30_000], 7000)).toEqual([0, 1000, 2000, 4000]);
    // The next attempt's wait: the schedule's, lengthened by Retry-After up to 60 s; none after the last.
    expect(nextAttemptInMs(1, null, waits)).toBe(0);
    expect(nextAttemptInMs(5, 120, waits)).toBe(60_000);
    expect(nextAttemptInMs(20, null, waits)).toBeNull();
    expect(() => loadConfig({ WEBHOOK_RETRY_TAIL: '30s,soon', WEBHOOK_DISABLE_AFTER: '0s' })).toThrow(
      /WEBHOOK_RETRY_TAIL="30s,soon": must be a comma-separated list of durations[\s\S]*WEBHOOK_DISABLE_AFTER="0s"/
    );
  });

  it('retention of stream events and the delivery log: 30 days by default, durations, nonsense refused', () => {
    expect(loadConfig({}).retention).toEqual({ streamEventsMs: 30 * 86_400_000, deliveryLogMs: 30 * 86_400_000 });
    expect(loadConfig({ STREAM_EVENT_RETENTION: '12h', DELIVERY_LOG_RETENTION: '2s' }).retention).toEqual({
      streamEventsMs: 12 * 3_600_000,
      deliveryLogMs: 2000,
    });
    for (const bad of ['soon', '30', '0s', '4000d'])
      expect(() => loadConfig({ STREAM_EVENT_RETENTION: bad })).toThrow(
        `STREAM_EVENT_RETENTION="${bad}": must be a duration from 1s to 3650d, such as 30d or 12h`
      );
  });

  it('identity providers: a JSON list of issuers with their audiences, the console issuer among them', () => {
    expect(loadConfig({}).oidc).toEqual({ issuers: [], clockToleranceSeconds: 60, jwksCooldownMs: 30_000 });
    const c = loadConfig({
      OIDC_ISSUERS: JSON.stringify([
        { issuer: 'https://login.example.com', audience: ['aas-client', 'aas-console'] },
        { issuer: 'http://127.0.0.1:9000', audience: 'local' },
      ]),
      OIDC_CONSOLE_ISSUER: 'https://login.example.com',
      OIDC_CONSOLE_CLIENT_ID: 'aas-console',
      OIDC_CLOCK_TOLERANCE: '2m',
      OIDC_JWKS_COOLDOWN: '0s',
    });
    expect(c.oidc).toEqual({
      issuers: [
        { issuer: 'https://login.example.com', audiences: ['aas-client', 'aas-console'] },
        { issuer: 'http://127.0.0.1:9000', audiences: ['local'] },
      ],
      clockToleranceSeconds: 120,
      jwksCooldownMs: 0,
      console: { issuer: 'https://login.example.com', clientId: 'aas-console' },
    });
    const problems = (env: Record<string, string>): string => {
      try {
        loadConfig(env);
        return '';
      } catch (err) {
        return (err as ConfigError).problems.join('\n');
      }
    };
    expect(problems({ OIDC_ISSUERS: 'https://login.example.com' })).toMatch(/OIDC_ISSUERS: not a JSON array/);
    expect(problems({ OIDC_ISSUERS: '[{"issuer":"http://login.example.com","audience":"a"}]' })).toMatch(
      /not an issuer URL/
    );
    expect(problems({ OIDC_ISSUERS: '[{"issuer":"https://login.example.com"}]' })).toMatch(/needs an audience/);
    expect(
      problems({
        OIDC_ISSUERS: '[{"issuer":"https://login.example.com","audience":"a"}]',
        OIDC_CONSOLE_ISSUER: 'https://other.example.com',
      })
    ).toMatch(/OIDC_CONSOLE_ISSUER="https:\/\/other.example.com": must be an issuer of OIDC_ISSUERS/);
    expect(
      problems({
        OIDC_ISSUERS: '[{"issuer":"https://login.example.com","audience":"a"}]',
        OIDC_CONSOLE_ISSUER: 'https://login.example.com',
        OIDC_CONSOLE_CLIENT_ID: 'b',
      })
    ).toMatch(/OIDC_CONSOLE_CLIENT_ID="b": must be an audience/);
  });

  it('requires ENCRYPTION_KEY in production', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/ENCRYPTION_KEY: required/);
  });

  it('the api process prints one line per problem and exits 1', () => {
    const root = path.resolve(__dirname, '..', '..');
    const res = spawnSync(process.execPath, ['--import', 'tsx', 'api/server.ts'], {
      cwd: root,
      env: { PATH: process.env.PATH, PORT: '99999', LOG_LEVEL: 'loud' },
      encoding: 'utf8',
      // Loading the api's sources through tsx on a loaded 2-core machine took more than 20 s once (killed, no output).
      timeout: 90_000,
    });
    expect(res.status).toBe(1);
    const lines = res.stderr.trim().split('\n');
    expect(lines).toEqual([
      'config error: PORT="99999": must be an integer between 0 and 65535',
      'config error: LOG_LEVEL="loud": must be one of fatal, error, warn, info, debug, trace, silent',
    ]);
  });
});
