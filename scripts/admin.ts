/**
 * Admin CLI (docs/architecture.md §9). Each command prints one JSON line on stdout; errors print one line on stderr
 * and exit 1 (2 for usage errors).
 *   bootstrap --org <name> --email <email> [--name <display name>]
 *       → {organizationId,userId,apiToken,serviceToken}
 *   token create --org <orgId> --user <userId> [--kind v1|service] [--scopes a,b] [--expires-in 2s] [--name n]
 *       → {token,scopes,expiresAt} (without --kind: a service token when --scopes is given, else a v1 token)
 *   token revoke --org <orgId> (--id <tokenId> | --token <clear token>)
 *       → {revoked:<tokenId>}
 *   token list --org <orgId> [--user <userId>]
 *       → {tokens:[{id,kind,name,hint,userId,scopes,createdAt,expiresAt,revokedAt,lastUsedAt}]} (newest first)
 *   member add --org <orgId> --email <email> [--name <display name>] [--role owner|admin|member]
 *       → {organizationId,userId,role,created}
 *   migrate
 *       → {collections:{created},indexes:{created,dropped,declared},ttlIndexes:{created,supported},
 *          searchAttributes:{namespace,created,present}}: creates what the database and the Temporal namespace lack
 *         (the models' collections and indexes, the TTL indexes, the custom search attributes); drops only the
 *         retired indexes (lib/indexes.ts RETIRED_INDEXES: replaced by others)
 *   check
 *       → {mongodb:{ok,indexes},temporal:{address,namespace,security,apiKey,searchAttributes}}: reaches MongoDB and
 *         the Temporal namespace with the configured settings (TLS, mTLS, API key) and finds every index and search
 *         attribute there, or says what is missing (exit 1, "run admin migrate")
 *   rate-limit set --org <orgId> --user <userId> --limit <requests per window | default>
 *       → {organizationId,userId,rateLimit} (rateLimit null = the configured default)
 *   share set --org <orgId> --weight <weight | default>
 *       → {organizationId,weight}: the organization's weight in the sharing of execution slots (docs/fairness.md)
 *   link-identity --issuer <iss> --subject <sub> --user <userId> [--org <orgId>]
 *       → {issuer,subject,userId,organizationId}: ID tokens of that identity act as the user (docs/identity.md)
 *   unlink-identity --issuer <iss> --subject <sub>
 *       → {removed}
 *   domain add --org <orgId> --domain <example.com> [--issuer <iss>]
 *       → {domain,organizationId,issuer}: verified emails of the domain map to the organization's members
 *   domain remove --org <orgId> --domain <example.com>
 *       → {removed}
 * The database is MONGODB_URI, else the one `npm run dev` runs (its address is in .data/servers.json). In the
 * production image: `node dist/scripts/admin.js <command>` (docs/operations.md "Production"). In production
 * (NODE_ENV=production) no command builds an index as it connects, and the commands that write records refuse to
 * run without the unique indexes, as the api and the worker do (lib/indexes.ts).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import ms from 'ms';
import { addMember, bootstrapOrganization } from '../commands/bootstrap';
import { addIdentityDomain, linkIdentity, removeIdentityDomain, unlinkIdentity } from '../commands/identity';
import {
  DEFAULT_FAIRNESS_WEIGHT,
  FAIRNESS_WEIGHT_MAX,
  FAIRNESS_WEIGHT_MIN,
  setFairnessWeight,
} from '../commands/fairShare';
import { setRateLimit } from '../commands/rateLimits';
import { rebuildRangeProblem, rebuildSpendRollups } from '../commands/spendRebuild';
import { createToken, listTokens, revokeToken } from '../commands/tokens';
import { loadConfigOrExit, type Config } from '../lib/config';
import { sha256Hex } from '../lib/crypto';
import { AppError } from '../lib/errors';
import { findMissing, migrate } from '../commands/migrate';
import { declaredIndexes, indexesAtStart } from '../lib/indexes';
import { autoIndexFor, connectMongo, disconnectMongo, pingMongo } from '../lib/mongo';
import {
  connectionSecurity,
  createTemporal,
  pingTemporal,
  temporalConnectFailure,
  temporalConnectionOptions,
} from '../lib/temporal';
import { ApiToken, MEMBER_ROLES, type MemberRole } from '../models';
import { SEARCH_ATTRIBUTES } from '../workflows/searchAttributes';

class UsageError extends Error {}

/** How long `migrate` waits for a namespace that does not exist yet. */
const NAMESPACE_WAIT_MS = 60_000;
/** The gRPC status of a namespace that does not exist. */
const GRPC_NOT_FOUND = 5;

const USAGE = `usage:
  admin bootstrap --org <name> --email <email> [--name <display name>]
  admin token create --org <orgId> --user <userId> [--kind v1|service] [--scopes a,b] [--expires-in 2s] [--name <name>]
  admin token revoke --org <orgId> (--id <tokenId> | --token <token>)
  admin token list --org <orgId> [--user <userId>]
  admin member add --org <orgId> --email <email> [--name <display name>] [--role owner|admin|member]
  admin rate-limit set --org <orgId> --user <userId> --limit <n | default>
  admin spend rebuild --org <orgId> --from <YYYY-MM-DD> --to <YYYY-MM-DD> [--dry-run]

  admin share set --org <orgId> --weight <n | default>
  admin link-identity --issuer <iss> --subject <sub> --user <userId> [--org <orgId>]
  admin unlink-identity --issuer <iss> --subject <sub>
  admin domain add --org <orgId> --domain <example.com> [--issuer <iss>]
  admin domain remove --org <orgId> --domain <example.com>
  admin migrate
  admin check`;

const COMMANDS = [
  'bootstrap',
  'token create',
  'token revoke',
  'token list',
  'member add',
  'rate-limit set',
  'spend rebuild',

  'share set',
  'link-identity',
  'unlink-identity',
  'domain add',
  'domain remove',
  'migrate',
  'check',
];

function need(values: Record<string, unknown>, name: string): string {
  const v = values[name];
  if (typeof v !== 'string' || v.trim() === '') throw new UsageError(`--${name} is required`);
  return v.trim();
}

function mongoUri(configured: string | undefined, dataDir: string): string {
  if (configured) return configured;
  const file = path.join(dataDir, 'servers.json');
  if (existsSync(file)) {
    const servers = JSON.parse(readFileSync(file, 'utf8')) as { mongodbUri?: string };
    if (servers.mongodbUri) return servers.mongodbUri;
  }
  throw new Error(
    'no database: set MONGODB_URI, or start `npm run dev` first (it records its MongoDB address in .data/servers.json)'
  );
}

async function run(argv: string[]): Promise<unknown> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      org: { type: 'string' },
      email: { type: 'string' },
      name: { type: 'string' },
      user: { type: 'string' },
      kind: { type: 'string' },
      scopes: { type: 'string' },
      'expires-in': { type: 'string' },
      id: { type: 'string' },
      token: { type: 'string' },
      limit: { type: 'string' },
      weight: { type: 'string' },
      issuer: { type: 'string' },
      subject: { type: 'string' },
      domain: { type: 'string' },
      role: { type: 'string', default: 'member' },
      from: { type: 'string' },
      to: { type: 'string' },
      'dry-run': { type: 'boolean' },
    },
  });
  const command = positionals.join(' ');
  if (!COMMANDS.includes(command)) throw new UsageError(`unknown command "${command}"`);

  // Validate arguments before touching the database.
  let action: () => Promise<unknown>;
  if (command === 'bootstrap') {
    const org = need(values, 'org');
    const email = need(values, 'email');
    if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw new UsageError(`--email ${email} is not an email address`);
    action = () => bootstrapOrganization({ org, email, name: values.name });
  } else if (command === 'token create') {
    const organizationId = need(values, 'org');
    const userId = need(values, 'user');
    // Scopes exist only on service tokens: `--scopes` without `--kind` means a service token (docs/decisions.md
    // "Admin CLI: --scopes without --kind"); `--kind v1 --scopes` stays a usage error.
    const kind = values.kind ?? (values.scopes !== undefined ? 'service' : 'v1');
    if (kind !== 'v1' && kind !== 'service') throw new UsageError('--kind must be v1 or service');
    let expiresAt: Date | null = null;
    if (values['expires-in'] !== undefined) {
      const span = ms(values['expires-in'] as ms.StringValue) as number | undefined;
      if (typeof span !== 'number' || !(span > 0))
        throw new UsageError(`--expires-in ${values['expires-in']} is not a duration such as 30s, 15m, 12h or 90d`);
      expiresAt = new Date(Date.now() + span);
    }
    const scopes = values.scopes
      ?.split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    if (kind === 'v1' && scopes?.length) throw new UsageError('--scopes applies to service tokens (--kind service)');
    action = async () => {
      const { token, record } = await createToken({
        organizationId,
        userId,
        kind,
        scopes,
        expiresAt,
        name: values.name,
      });
      return { token, scopes: record.scopes, expiresAt: record.expiresAt ? record.expiresAt.toISOString() : null };
    };
  } else if (command === 'token list') {
    const organizationId = need(values, 'org');
    const userId = values.user?.trim() || undefined;
    action = async () => ({
      tokens: (await listTokens(organizationId, userId)).map((t) => ({
        id: t._id,
        kind: t.kind,
        name: t.name,
        hint: t.hint,
        userId: t.userId,
        scopes: t.scopes,
        createdAt: iso(t.createdAt),
        expiresAt: iso(t.expiresAt),
        revokedAt: iso(t.revokedAt),
        lastUsedAt: iso(t.lastUsedAt),
      })),
    });
  } else if (command === 'member add') {
    const organizationId = need(values, 'org');
    const email = need(values, 'email');
    if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw new UsageError(`--email ${email} is not an email address`);
    const role = values.role as MemberRole;
    if (!MEMBER_ROLES.includes(role)) throw new UsageError(`--role must be one of ${MEMBER_ROLES.join(', ')}`);
    action = () => addMember({ organizationId, email, name: values.name, role });
  } else if (command === 'link-identity') {
    const issuer = need(values, 'issuer');
    const subject = need(values, 'subject');
    const userId = need(values, 'user');
    const organizationId = values.org?.trim() || undefined;
    action = () => linkIdentity({ issuer, subject, userId, organizationId });
  } else if (command === 'unlink-identity') {
    const issuer = need(values, 'issuer');
    const subject = need(values, 'subject');
    action = async () => ({ removed: await unlinkIdentity(issuer, subject) });
  } else if (command === 'domain add') {
    const organizationId = need(values, 'org');
    const domain = need(values, 'domain');
    const issuer = values.issuer?.trim() || undefined;
    action = () => addIdentityDomain({ organizationId, domain, issuer });
  } else if (command === 'domain remove') {
    const organizationId = need(values, 'org');
    const domain = need(values, 'domain');
    action = async () => ({ removed: await removeIdentityDomain(organizationId, domain) });
  } else if (command === 'check') {
    return check(loadConfigOrExit());
  } else if (command === 'migrate') {
    return runMigrate(loadConfigOrExit());
  } else if (command === 'share set') {
    const organizationId = need(values, 'org');
    const raw = need(values, 'weight');
    const weight = raw === 'default' ? null : Number(raw);
    if (weight !== null && !(weight >= FAIRNESS_WEIGHT_MIN && weight <= FAIRNESS_WEIGHT_MAX))
      throw new UsageError(
        `--weight ${raw} must be a number between ${FAIRNESS_WEIGHT_MIN} and ${FAIRNESS_WEIGHT_MAX}, or default`
      );
    action = async () => {
      await setFairnessWeight(organizationId, weight);
      return { organizationId, weight: weight ?? DEFAULT_FAIRNESS_WEIGHT };
    };
  } else if (command === 'rate-limit set') {
    const organizationId = need(values, 'org');
    const userId = need(values, 'user');
    const raw = need(values, 'limit');
    const limit = raw === 'default' ? null : Number(raw);
    if (limit !== null && !(Number.isInteger(limit) && limit >= 1 && limit <= 1_000_000))
      throw new UsageError(`--limit ${raw} must be an integer between 1 and 1000000, or default`);
    action = async () => {
      await setRateLimit(organizationId, userId, limit);
      return { organizationId, userId, rateLimit: limit };
    };
  } else if (command === 'spend rebuild') {
    const organizationId = need(values, 'org');
    const range = { from: need(values, 'from'), to: need(values, 'to') };
    const problem = rebuildRangeProblem(range, new Date());
    if (problem) throw new UsageError(problem);
    action = () => rebuildSpendRollups(organizationId, range, { dryRun: values['dry-run'] === true });
  } else {
    const organizationId = need(values, 'org');
    if (!values.id && !values.token) throw new UsageError('--id or --token is required');
    action = async () => {
      let id = values.id;
      if (!id) {
        const found = await ApiToken.findOne({ hash: sha256Hex(values.token as string), organizationId })
          .select({ _id: 1 })
          .lean();
        if (!found) throw new Error('Token not found');
        id = found._id;
      }
      await revokeToken(organizationId, id);
      return { revoked: id };
    };
  }

  const config = loadConfigOrExit();
  const autoIndex = autoIndexFor(config.nodeEnv);
  await connectMongo(mongoUri(config.mongodbUri, config.dataDir), { autoIndex });
  try {
    if (!autoIndex) {
      const { fatal } = await indexesAtStart();
      if (fatal) throw new Error(fatal);
    }
    return await action();
  } finally {
    await disconnectMongo();
  }
}

/**
 * Reaches MongoDB and the Temporal namespace with the configured settings, as the api and the worker would, and
 * finds there what `admin migrate` creates (building nothing itself).
 * @param config the configuration.
 * @returns what was reached and verified.
 */
async function check(config: Readonly<Config>): Promise<unknown> {
  await connectMongo(mongoUri(config.mongodbUri, config.dataDir), {
    timeoutMs: config.dependencyTimeoutMs,
    autoIndex: false,
  });
  const temporal = createTemporal(config);
  try {
    await pingMongo(config.dependencyTimeoutMs);
    const options = temporalConnectionOptions(config);
    await pingTemporal(temporal, config.dependencyTimeoutMs).catch((err: unknown) => {
      throw new Error(temporalConnectFailure(config, err));
    });
    const missing = await findMissing(temporal);
    const lacking = [
      missing.indexes.length > 0 ? `indexes ${missing.indexes.join(', ')}` : '',
      missing.ttlIndexes.length > 0 ? `TTL indexes ${missing.ttlIndexes.join(', ')}` : '',
      missing.searchAttributes.length > 0
        ? `search attributes ${missing.searchAttributes.join(', ')} (namespace ${config.temporalNamespace})`
        : '',
    ].filter(Boolean);
    if (lacking.length > 0) throw new Error(`missing ${lacking.join('; ')}: run \`admin migrate\``);
    return {
      mongodb: { ok: true, indexes: declaredIndexes().length },
      temporal: {
        address: options.address,
        namespace: config.temporalNamespace,
        security: connectionSecurity(options),
        apiKey: Boolean(options.apiKey),
        searchAttributes: Object.keys(SEARCH_ATTRIBUTES),
      },
    };
  } finally {
    await temporal.connection.close().catch(() => undefined);
    await disconnectMongo();
  }
}

/**
 * `admin migrate`: creates what the database and the namespace lack (commands/migrate.ts).
 * @param config the configuration.
 * @returns what it created.
 */
async function runMigrate(config: Readonly<Config>): Promise<unknown> {
  await connectMongo(mongoUri(config.mongodbUri, config.dataDir), {
    timeoutMs: config.dependencyTimeoutMs,
    autoIndex: false,
  });
  const temporal = createTemporal(config);
  try {
    // A namespace being made (the bundled server registers its own once it is up: compose starts migrate then)
    // is waited for, at most NAMESPACE_WAIT_MS.
    for (const deadline = Date.now() + NAMESPACE_WAIT_MS; ;) {
      const failure = await pingTemporal(temporal, config.dependencyTimeoutMs).then(
        () => undefined,
        (err: unknown) => err as { code?: number }
      );
      if (!failure) break;
      if (failure.code !== GRPC_NOT_FOUND || Date.now() > deadline)
        throw new Error(temporalConnectFailure(config, failure));
      await new Promise((r) => setTimeout(r, 1000));
    }
    return await migrate(temporal);
  } finally {
    await temporal.connection.close().catch(() => undefined);
    await disconnectMongo();
  }
}

const iso = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);

run(process.argv.slice(2)).then(
  (result) => {
    process.stdout.write(`${JSON.stringify(result)}\n`);
    process.exit(0);
  },
  (err: unknown) => {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`admin: ${(err as Error).message}\n${USAGE}\n`);
      process.exit(2);
    }
    const message = err instanceof AppError || err instanceof Error ? err.message : String(err);
    process.stderr.write(`admin: ${message}\n`);
    process.exit(1);
  }
);
