/**
 * Proof that the embedded database answers every query shape the application uses from an index, with enough
 * data that a sequential scan would be the planner's choice if no index matched (docs/query-shapes.md): 50,000
 * agents over 100 organizations and 20,000 events over 400 streams. Each shape runs through the application's
 * own code; PostgreSQL's statistics under FerretDB (pg_stat_user_tables / pg_stat_user_indexes) then show index
 * scans and no sequential scan of the collection's table. A negative control (a filter on a field no index
 * holds) shows that the method does see a sequential scan when there is one.
 *
 * With a real mongod (MONGODB_URI) there is no PostgreSQL: the same shapes are checked with MongoDB's explain.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import mongoose from 'mongoose';
import pg from 'pg';
import type { Client } from '@temporalio/client';
import { listAgents } from '../../commands/agents';
import { chatMessages } from '../../commands/chats';
import { cancelSubAgents, executionTree } from '../../commands/executions';
import { claimIdempotencyKey, completeIdempotencyKey } from '../../commands/idempotency';
import { countRequest } from '../../commands/rateLimits';
import { checkSkillIds, findSkillVersion, listSkills, listSkillVersions } from '../../commands/skills';
import { listDeliveries } from '../../commands/webhooks';
import { checkMediaIds, findMedia, listMedia } from '../../commands/media';
import {
  checkMcpServerIds,
  deleteMcpServer,
  findMcpServer,
  listMcpServers,
  mcpServersForAgent,
} from '../../commands/mcpServers';
import { deleteOAuthClient, listOAuthClients, revokeOAuthOfToken } from '../../commands/oauthClients';
import { reserveWorkspaceBytes } from '../../commands/workspaceQuota';
import { LocalDiskStorage } from '../../lib/fileStorage';
import type { AuthContext } from '../../commands/tokens';
import { appendEvents, lastSeq, readEvents } from '../../commands/eventLog';
import { EXPIRY_BUCKET_MS, expiryFields } from '../../lib/expiry';
import { sweepExpired } from '../../commands/expirySweeps';
import { foldSpend } from '../../commands/spendFold';
import {
  Agent,
  Chat,
  ChatMessage,
  Execution,
  IdempotencyRecord,
  LedgerEntry,
  McpServer,
  Media,
  OAuthClient,
  OAuthGrant,
  RateWindow,
  Skill,
  SkillVersion,
  ServiceEvent,
  SpaceAgent,
  StreamEvent,
  StreamHead,
  WebhookDelivery,
  WorkspaceReservation,
} from '../../models';
import { useTestDatabase } from '../helpers/mongo';

const { dbName } = useTestDatabase();
/** A collection for the negative control: an index on `k`, none on `other`. */
const control = {
  createIndex: (spec: Record<string, 1>) => mongoose.connection.collection('control').createIndex(spec),
  insertMany: (docs: never[]) => mongoose.connection.collection('control').insertMany(docs),
  findOne: (filter: Record<string, number>) => mongoose.connection.collection('control').findOne(filter),
};
const postgresUrl = process.env.AAS_TEST_POSTGRES_URL;

const ORGS = 100;
const AGENTS = 50_000;
const STREAMS = 400;
const EVENTS_PER_STREAM = 50;
/** Stream heads: one per stream ever written; most streams here have ended and their events are not seeded. */
const HEADS = 20_000;
const CONTROL = 20_000;
/** Rate-limit windows and idempotency records (expiring over the next day, a few already past). */
const EXPIRING = 20_000;
/** Chat messages: 20,000 over 400 chats of one organization (a chat's page must not read the organization's). */
const CHATS = 400;
const MESSAGES_PER_CHAT = 50;
/** Webhook delivery log entries, over ORGS organizations. */
const DELIVERIES = 20_000;
/** Chats and space-agent assignments seeded (over 500 spaces). */
const SPACE_ROWS = 20_000;
/** Skills over ORGS organizations, and versions: SKILL_VERSIONS each for the first VERSIONED_SKILLS of them. */
const SKILLS = 10_000;
const VERSIONED_SKILLS = 200;
const SKILL_VERSIONS = 50;
/**
 * Executions of one large organization (org_7): trees of one top-level execution and its sub-agents. Its sub-agent
 * and tree queries must touch one tree, not the organization's executions.
 */
const EXECUTIONS = 20_000;
const TREE = 10;

/** Media, MCP server instances, OAuth clients and OAuth grants, each over ORGS organizations (issue 25). */
const MEDIA = 10_000;
const MCP_SERVERS = 10_000;
const OAUTH_CLIENTS = 10_000;
const OAUTH_GRANTS = 10_000;
/** Workspace size reservations over 100 workspaces, one in ten left open by a process that died. */
const RESERVATIONS = 10_000;
/** Cost ledger entries over ORGS organizations, one in LEDGER_PENDING (one per organization) not yet folded. */
const LEDGER = 20_000;
const LEDGER_PENDING = 200;

const auth = (org: number): AuthContext => ({
  organizationId: `org_${org}`,
  userId: `usr_${org}`,
  tokenId: 'tok',
  kind: 'v1',
  scopes: ['*'],
  role: 'owner',
  activeWorkspaceId: null,
  rateLimit: null,
});

interface TableStats {
  seqScan: number;
  idxScan: number;
  /** Rows the index scans fetched (bitmap heap scans included). */
  idxFetched: number;
}

let client: pg.Client | undefined;

/** @returns the scan counters of the FerretDB table that holds `collection` in this file's database. */
async function tableStats(collection: string): Promise<TableStats> {
  const { rows } = await client!.query<{ seq_scan: string; idx_scan: string | null; idx_tup_fetch: string | null }>(
    `SELECT seq_scan, idx_scan, idx_tup_fetch FROM pg_stat_user_tables WHERE schemaname = $1 AND relname ~ $2`,
    [dbName, `^${collection}_[0-9a-f]{8}$`]
  );
  expect(rows).toHaveLength(1);
  return {
    seqScan: Number(rows[0].seq_scan),
    idxScan: Number(rows[0].idx_scan ?? 0),
    idxFetched: Number(rows[0].idx_tup_fetch ?? 0),
  };
}

/**
 * PostgreSQL backends publish their statistics when idle, at most once a second, else up to 10 s later
 * (PGSTAT_IDLE_INTERVAL). Waits past that, until two reads a second apart agree.
 */
async function settledStats(collections: string[]): Promise<Record<string, TableStats>> {
  const read = async (): Promise<Record<string, TableStats>> => {
    const out: Record<string, TableStats> = {};
    for (const c of collections) out[c] = await tableStats(c);
    return out;
  };
  await new Promise((r) => setTimeout(r, 11_000));
  let last = await read();
  for (;;) {
    await new Promise((r) => setTimeout(r, 1000));
    const now = await read();
    if (JSON.stringify(now) === JSON.stringify(last)) return now;
    last = now;
  }
}

beforeAll(async () => {
  await Agent.init();
  await StreamEvent.init();
  await StreamHead.init();
  const t0 = Date.now();
  const batch = 2000;
  for (let i = 0; i < AGENTS; i += batch) {
    await Agent.collection.insertMany(
      Array.from({ length: batch }, (_, j) => {
        const n = i + j;
        const org = n % ORGS;
        return {
          _id: `agt_${n}`,
          organizationId: `org_${org}`,
          userId: `usr_${org}`,
          ownerId: `usr_${org}`,
          name: `agent ${n}`,
          systemPrompt: 'Be brief.',
          visibility: 'organization',
          spaceId: `spc_${n}`,
          chatId: `chat_${n}`,
          archived: false,
          createdAt: new Date(1_700_000_000_000 + n * 1000),
          updatedAt: new Date(1_700_000_000_000 + n * 1000),
        };
      }) as never[],
      { ordered: false }
    );
  }
  const hour = Math.floor(Date.now() / EXPIRY_BUCKET_MS);
  const expiring = (k: number) => {
    const bucket = k % 100 === 0 ? hour - 2 : hour + 1 + (k % 24);
    return { expiresAt: new Date(bucket * EXPIRY_BUCKET_MS + 1000), expiryBucket: bucket };
  };
  for (let s = 0; s < STREAMS; s += 50) {
    await StreamEvent.collection.insertMany(
      Array.from({ length: 50 * EVENTS_PER_STREAM }, (_, k) => {
        const streamId = `exec-${s + Math.floor(k / EVENTS_PER_STREAM)}`;
        const seq = (k % EVENTS_PER_STREAM) + 1;
        return { _id: `${streamId}:${seq}`, event: 'message', data: { text: 'x' }, ...expiring(k) };
      }) as never[],
      { ordered: false }
    );
  }
  for (let h = 0; h < HEADS; h += batch) {
    await StreamHead.collection.insertMany(
      Array.from({ length: batch }, (_, k) => ({ _id: `exec-${h + k}`, lastSeq: EVENTS_PER_STREAM })) as never[]
    );
  }
  await RateWindow.init();
  await IdempotencyRecord.init();
  for (let e = 0; e < EXPIRING; e += batch) {
    await RateWindow.collection.insertMany(
      Array.from({ length: batch }, (_, k) => ({
        _id: `org_${(e + k) % ORGS}:usr_${e + k}:${1_700_000_000_000 + (e + k) * 60_000}`,
        count: 7,
        ...expiring(e + k),
      })) as never[]
    );
    await IdempotencyRecord.collection.insertMany(
      Array.from({ length: batch }, (_, k) => ({
        _id: `org_${(e + k) % ORGS}:usr_${e + k}:${e + k}`,
        fingerprint: 'f',
        state: 'done',
        lockedUntil: new Date(),
        response: JSON.stringify({ status: 201, body: { ok: true }, headers: {} }),
        ...expiring(e + k),
      })) as never[]
    );
  }
  await Chat.init();
  await ChatMessage.init();
  await SpaceAgent.init();
  // Chats and agents created in spaces, spread over the organizations (chat_7 in org_7's spc_7 among them).
  for (let c = 0; c < SPACE_ROWS; c += batch) {
    const rows = Array.from({ length: batch }, (_, k) => c + k);
    await Chat.collection.insertMany(
      rows.map((n) => ({
        _id: `chat_${n}`,
        organizationId: `org_${n % ORGS}`,
        spaceId: `spc_${n % (ORGS * 5)}`,
        agentId: `agt_${n}`,
        ownerId: `usr_${n % ORGS}`,
        title: 'c',
        status: 'done',
        closed: false,
        createdAt: new Date(1_700_000_000_000 + n * 1000),
        updatedAt: new Date(),
      })) as never[]
    );
    await SpaceAgent.collection.insertMany(
      rows.map((n) => ({
        _id: `spc_${n % (ORGS * 5)}:agt_${n}`,
        organizationId: `org_${n % ORGS}`,
        spaceId: `spc_${n % (ORGS * 5)}`,
        agentId: `agt_${n}`,
        createdAt: new Date(1_700_000_000_000 + n * 1000),
      })) as never[]
    );
  }
  for (let c = 0; c < CHATS; c += 50) {
    await ChatMessage.collection.insertMany(
      Array.from({ length: 50 * MESSAGES_PER_CHAT }, (_, k) => {
        const chatId = `chat_${c + Math.floor(k / MESSAGES_PER_CHAT)}`;
        const position = (k % MESSAGES_PER_CHAT) + 2;
        return {
          _id: `${chatId}:${position}`,
          organizationId: 'org_7',
          chatId,
          sessionId: `ses_${chatId}`,
          executionId: `exec-${chatId}-${position >> 1}`,
          role: position % 2 === 0 ? 'user' : 'assistant',
          content: 'x',
          position,
          createdAt: new Date(),
          updatedAt: new Date(),
        };
      }) as never[],
      { ordered: false }
    );
  }
  await WebhookDelivery.init();
  await ServiceEvent.init();
  for (let d = 0; d < DELIVERIES; d += batch) {
    await WebhookDelivery.collection.insertMany(
      Array.from({ length: batch }, (_, k) => ({
        _id: `evt_${d + k}`,
        organizationId: `org_${(d + k) % ORGS}`,
        type: 'task.created',
        status: 'delivered',
        run: 1,
        attempts: [{ run: 1, attempt: 1, at: new Date(), status: 200, latencyMs: 5, error: null }],
        createdAt: new Date(Date.now() - (d + k) * 1000),
        updatedAt: new Date(),
        ...expiring(d + k),
      })) as never[]
    );
    if ((d / batch) % 2 === 0)
      await ServiceEvent.collection.insertMany(
        Array.from({ length: batch }, (_, k) => ({
          _id: `evt_${d + k}`,
          organizationId: `org_${(d + k) % ORGS}`,
          type: 'task.created',
          data: '{}',
          createdAt: new Date(Date.now() - (d + k) * 1000),
          ...expiring(d + k),
        })) as never[]
      );
  }
  await Skill.init();
  await SkillVersion.init();
  const skillFields = {
    displayName: 's',
    description: '',
    prompt: 'p',
    category: 'other',
    builtInTools: [],
    requiredMCPs: [],
  };
  for (let k = 0; k < SKILLS; k += batch) {
    await Skill.collection.insertMany(
      Array.from({ length: batch }, (_, i) => ({
        _id: `skl_${k + i}`,
        organizationId: `org_${(k + i) % ORGS}`,
        ownerId: `usr_${(k + i) % ORGS}`,
        name: `skill-${k + i}`,
        ...skillFields,
        visibility: 'organization',
        version: 1,
        deletedAt: null,
        createdAt: new Date(1_700_000_000_000 + (k + i) * 1000),
        updatedAt: new Date(),
      })) as never[]
    );
  }
  for (let k = 0; k < VERSIONED_SKILLS * SKILL_VERSIONS; k += batch) {
    await SkillVersion.collection.insertMany(
      Array.from({ length: batch }, (_, i) => {
        const skill = Math.floor((k + i) / SKILL_VERSIONS);
        const version = ((k + i) % SKILL_VERSIONS) + 1;
        return {
          _id: `skl_${skill}:${version}`,
          skillId: `skl_${skill}`,
          organizationId: `org_${skill % ORGS}`,
          ownerId: `usr_${skill % ORGS}`,
          version,
          name: `skill-${skill}`,
          ...skillFields,
          visibility: 'organization',
          createdBy: `usr_${skill % ORGS}`,
          createdAt: new Date(),
        };
      }) as never[]
    );
  }
  await Execution.init();
  for (let k = 0; k < EXECUTIONS; k += batch) {
    await Execution.collection.insertMany(
      Array.from({ length: batch }, (_, i) => {
        const n = k + i;
        const root = n - (n % TREE);
        const org = 'org_7';
        return {
          _id: `exec-1-${n}`,
          organizationId: org,
          agentId: `agt_${n}`,
          userId: 'usr_1',
          chatId: `chat_${n}`,
          sessionId: `ses_${n}`,
          spaceId: 'spc_1',
          turn: 1,
          status: 'completed',
          input: { message: 'm' },
          provider: 'anthropic',
          model: 'm',
          usage: { inputTokens: 1, outputTokens: 1 },
          parentExecutionId: n === root ? null : `exec-1-${root}`,
          parentToolCallId: n === root ? null : `toolu_${n}`,
          depth: n === root ? 0 : 1,
          rootExecutionId: `exec-1-${root}`,
          source: n === root ? 'v1' : 'subagent',
          createdAt: new Date(1_700_000_000_000 + n * 1000),
          updatedAt: new Date(),
        };
      }) as never[]
    );
  }
  await Media.init();
  await McpServer.init();
  await OAuthClient.init();
  await OAuthGrant.init();
  const day = 86_400_000;
  for (let k = 0; k < MEDIA; k += batch) {
    await Media.collection.insertMany(
      Array.from({ length: batch }, (_, i) => ({
        _id: `med_${k + i}`,
        organizationId: `org_${(k + i) % ORGS}`,
        ownerId: `usr_${(k + i) % ORGS}`,
        name: `m${k + i}.png`,
        contentType: 'image/png',
        size: 100,
        sha256: 'x'.repeat(64),
        createdAt: new Date(1_700_000_000_000 + (k + i) * 1000),
        updatedAt: new Date(),
      })) as never[]
    );
  }
  for (let k = 0; k < MCP_SERVERS; k += batch) {
    await McpServer.collection.insertMany(
      Array.from({ length: batch }, (_, i) => ({
        _id: `mcp_${k + i}`,
        organizationId: `org_${(k + i) % ORGS}`,
        name: `server-${k + i}`,
        url: 'https://mcp.example/mcp',
        createdBy: `usr_${(k + i) % ORGS}`,
        createdAt: new Date(1_700_000_000_000 + (k + i) * 1000),
        updatedAt: new Date(),
      })) as never[]
    );
  }
  for (let k = 0; k < OAUTH_CLIENTS; k += batch) {
    await OAuthClient.collection.insertMany(
      Array.from({ length: batch }, (_, i) => {
        const n = k + i;
        return {
          _id: `oac_${n}`,
          name: `client ${n}`,
          secretHash: 'h',
          tokenEndpointAuthMethod: 'client_secret_basic',
          grantTypes: ['client_credentials'],
          redirectUris: [],
          organizationId: `org_${n % ORGS}`,
          userId: `usr_${n % ORGS}`,
          tokenId: `tok_${n % (ORGS * 10)}`,
          createdAt: new Date(1_700_000_000_000 + n * 1000),
          updatedAt: new Date(),
          ...expiryFields(new Date(Date.now() + day + (n % 24) * EXPIRY_BUCKET_MS)),
        };
      }) as never[]
    );
    await OAuthGrant.collection.insertMany(
      Array.from({ length: Math.min(batch, OAUTH_GRANTS - k) }, (_, i) => {
        const n = k + i;
        return {
          _id: `grant_${n}`,
          kind: 'refresh',
          clientId: `oac_${n}`,
          organizationId: `org_${n % ORGS}`,
          userId: `usr_${n % ORGS}`,
          scope: 'mcp',
          resource: 'https://aas.example/mcp',
          revokedAt: null,
          tokenId: `tok_${n % (ORGS * 10)}`,
          familyId: `grant_${n}`,
          createdAt: new Date(),
          ...expiryFields(new Date(Date.now() + day + (n % 24) * EXPIRY_BUCKET_MS)),
        };
      }) as never[]
    );
  }
  await WorkspaceReservation.init();
  for (let k = 0; k < RESERVATIONS; k += batch) {
    await WorkspaceReservation.collection.insertMany(
      Array.from({ length: batch }, (_, i) => {
        const n = k + i;
        const seq = Math.floor(n / 100) + 1;
        return {
          _id: `spc_r${n % 100}:${seq}`,
          organizationId: `org_${n % ORGS}`,
          spaceId: `spc_r${n % 100}`,
          seq,
          bytes: 10,
          open: n % 10 === 0,
          heldUntil: new Date(Date.now() - 3_600_000),
          createdAt: new Date(),
          ...expiryFields(new Date(Date.now() + day)),
        };
      }) as never[]
    );
  }
  // Clients of people (no organization) that members of org_7 authorized.
  const PERSON_CLIENTS = 5;
  await OAuthClient.collection.insertMany(
    Array.from({ length: PERSON_CLIENTS }, (_, i) => ({
      _id: `oac_person_${i}`,
      name: `person client ${i}`,
      secretHash: null,
      tokenEndpointAuthMethod: 'none',
      grantTypes: ['authorization_code', 'refresh_token'],
      redirectUris: ['https://client.example/cb'],
      organizationId: null,
      userId: null,
      tokenId: null,
      createdAt: new Date(),
      updatedAt: new Date(),
      ...expiryFields(new Date(Date.now() + day)),
    })) as never[]
  );
  await OAuthGrant.collection.insertMany(
    Array.from({ length: PERSON_CLIENTS }, (_, i) => ({
      _id: `grant_person_${i}`,
      kind: 'refresh',
      clientId: `oac_person_${i}`,
      organizationId: 'org_7',
      userId: 'usr_7',
      scope: 'mcp',
      resource: 'https://aas.example/mcp',
      revokedAt: null,
      tokenId: null,
      familyId: `grant_person_${i}`,
      createdAt: new Date(),
      ...expiryFields(new Date(Date.now() + day)),
    })) as never[]
  );
  await LedgerEntry.init();
  for (let k = 0; k < LEDGER; k += batch) {
    await LedgerEntry.collection.insertMany(
      Array.from({ length: batch }, (_, i) => {
        const n = k + i;
        return {
          _id: `exec-l${n}:1`,
          organizationId: `org_${n % ORGS}`,
          agentId: `agt_${n % ORGS}`,
          executionId: `exec-l${n}`,
          rootExecutionId: `exec-l${n}`,
          turn: 1,
          provider: 'anthropic',
          model: 'claude-test',
          inputTokens: 10,
          outputTokens: 5,
          costUsd: null,
          day: new Date().toISOString().slice(0, 10),
          createdAt: new Date(Date.now() - (LEDGER - n) * 1000),
          ...(Math.floor(n / ORGS) % LEDGER_PENDING === 3 ? { pending: true } : {}),
        };
      }) as never[]
    );
  }
  await control.createIndex({ k: 1 });
  for (let c = 0; c < CONTROL; c += batch) {
    await control.insertMany(
      Array.from({ length: batch }, (_, i) => ({ _id: `c${c + i}`, k: c + i, other: c + i })) as never[]
    );
  }
  expect(await Agent.estimatedDocumentCount()).toBe(AGENTS);
  process.stderr.write(
    `[index usage] seeded ${AGENTS} agents and ${STREAMS * EVENTS_PER_STREAM} events in ${Date.now() - t0} ms\n`
  );
  if (postgresUrl) {
    client = new pg.Client({ connectionString: postgresUrl });
    await client.connect();
    // The mirror creates its GIN indexes within a second of FerretDB's own; wait until every indexed field has one.
    const deadline = Date.now() + 15_000;
    for (;;) {
      const { rows } = await client.query<{ n: string }>(
        `SELECT count(*) AS n FROM pg_indexes WHERE schemaname = $1 AND indexname LIKE '%\\_aasgin'`,
        [dbName]
      );
      // The leading field of each index but `_id` (the patched FerretDB reads `_id` from its own unique btree:
      // tools/ferretdb/indexes.patch): agents organizationId; stream_events expiryBucket; rate_windows and
      // idempotency_records expiryBucket; control k; FerretDB's metadata table; chat_messages organizationId, chatId;
      // chats organizationId, spaceId; webhook_deliveries and service_events organizationId, expiryBucket; skills
      // organizationId; skill_versions skillId; media organizationId; mcp_servers organizationId; oauth_clients
      // expiryBucket, tokenId, organizationId; oauth_grants expiryBucket, tokenId, familyId, organizationId;
      // workspace_reservations spaceId, expiryBucket; executions organizationId, rootExecutionId, parentExecutionId;
      // ledger_entries rootExecutionId, organizationId, pending.
      if (Number(rows[0].n) >= 35 || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    await client.query(`ANALYZE`); // as autovacuum would after a bulk load; plans then reflect the data
  }
}, 300_000);

afterAll(async () => {
  await client?.end();
});

/** The application's query shapes, each as the code issues it. */
const shapes: Array<[string, string, () => Promise<unknown>]> = [
  ['find by id', 'agents', () => Agent.findById('agt_31337').lean()],
  ['tenant-scoped find by id', 'agents', () => Agent.findOne({ _id: 'agt_31337', organizationId: 'org_37' }).lean()],
  ['update by id', 'agents', () => Agent.updateOne({ _id: 'agt_31338' }, { $set: { name: 'renamed' } })],
  [
    'tenant-scoped update',
    'agents',
    () => Agent.updateOne({ _id: 'agt_31339', organizationId: 'org_39' }, { $set: { role: 'Reviewer' } }),
  ],
  ['list: first page and count', 'agents', () => listAgents(auth(7), { limit: 20 })],
  [
    'list: next page and count',
    'agents',
    async () => {
      const first = await listAgents(auth(8), { limit: 20 });
      expect(first.nextCursor).toBeTruthy();
      const next = await listAgents(auth(8), { limit: 20, cursor: first.nextCursor! });
      expect(next.items[0].createdAt.getTime()).toBeLessThan(first.items[19].createdAt.getTime());
    },
  ],
  ['count', 'agents', () => Agent.countDocuments({ organizationId: 'org_9', archived: false })],
  ['event log: stream head', 'stream_heads', () => lastSeq('exec-123')],
  ['event log: read a range', 'stream_events', () => readEvents('exec-124', 40)],
  [
    'event log: append (events, then the head)',
    'stream_heads',
    () => appendEvents('exec-125', [{ seq: EVENTS_PER_STREAM + 1, event: 'result', data: {} }]),
  ],
  [
    'space chatCount: count by organization and space',
    'chats',
    async () => expect(await Chat.countDocuments({ organizationId: 'org_7', spaceId: 'spc_7' })).toBe(SPACE_ROWS / 500),
  ],
  [
    'space assignedAgents: the agents created in a space',
    'space_agents',
    async () =>
      expect(
        await SpaceAgent.find({ spaceId: 'spc_7' }).sort({ createdAt: 1 }).select({ agentId: 1 }).lean()
      ).toHaveLength(SPACE_ROWS / 500),
  ],
  ['rate limit: count a request (upsert by _id)', 'rate_windows', () => countRequest('org_5:usr_5', 60)],
  ['rate limit: the same window again', 'rate_windows', () => countRequest('org_5:usr_5', 60)],
  [
    'idempotency: claim a new key, then store its answer',
    'idempotency_records',
    async () => {
      const claim = await claimIdempotencyKey(auth(3), 'new-key', 'f');
      await completeIdempotencyKey(claim.id, { status: 201, body: {}, headers: {} });
    },
  ],
  [
    'idempotency: the same key again (lookup by _id, replay)',
    'idempotency_records',
    async () => expect((await claimIdempotencyKey(auth(3), 'new-key', 'f')).replay?.status).toBe(201),
  ],
  ['expiry sweep: delete by bucket', 'rate_windows', () => sweepExpired()],
  // The same sweep deletes the passed buckets of every expiring collection; each collection is counted below.
  ['expiry sweep: stream events', 'stream_events', async () => undefined],
  ['expiry sweep: the delivery log', 'webhook_deliveries', async () => undefined],
  ['expiry sweep: service events', 'service_events', async () => undefined],
  [
    'event log: resume past expired events (a binary search by _id)',
    'stream_events',
    async () => {
      // exec-5000's head says 50 events; none is kept (they expired).
      const events = await readEvents('exec-5000', 3);
      expect(events.map((e) => [e.seq, e.event])).toEqual([[EVENTS_PER_STREAM, 'expired']]);
    },
  ],
  [
    'chat messages: one page of one chat, and the next',
    'chat_messages',
    async () => {
      const first = await chatMessages(auth(7), 'chat_7', { limit: 20 });
      expect(first.messages.map((m) => m.position)).toEqual(Array.from({ length: 20 }, (_, i) => i + 2));
      const next = await chatMessages(auth(7), 'chat_7', { limit: 20, after: first.next! });
      expect(next.messages[0].position).toBe(22);
    },
  ],
  [
    'webhook delivery log: newest 50 of one organization',
    'webhook_deliveries',
    async () => {
      const page = await listDeliveries(auth(7), 50);
      expect(page.map((d) => d._id).slice(0, 2)).toEqual(['evt_7', 'evt_107']);
    },
  ],
  [
    'skills: first page and count, next page (one organization of 100)',
    'skills',
    async () => {
      const first = await listSkills(auth(7), {}, { limit: 20 });
      expect([first.total, first.items.length]).toEqual([SKILLS / ORGS, 20]);
      const next = await listSkills(auth(7), {}, { limit: 20, cursor: first.nextCursor! });
      expect(next.items[0].createdAt.getTime()).toBeLessThan(first.items[19].createdAt.getTime());
    },
  ],
  [
    'skills of an agent: up to 20 by _id in one $or (validation, execution)',
    'skills',
    () => checkSkillIds(auth(7), ['skl_7', 'skl_107', 'skl_207', 'skl_9907'], 'skillIds'),
  ],
  [
    'skill versions: newest page, next page; one version by _id',
    'skill_versions',
    async () => {
      const first = await listSkillVersions(auth(7), 'skl_7', { limit: 20 });
      expect(first.items.map((v) => v.version).slice(0, 2)).toEqual([SKILL_VERSIONS, SKILL_VERSIONS - 1]);
      const next = await listSkillVersions(auth(7), 'skl_7', { limit: 20, cursor: first.nextCursor! });
      expect(next.items[0].version).toBe(SKILL_VERSIONS - 20);
      expect((await findSkillVersion(auth(7), 'skl_7', 3)).version).toBe(3);
    },
  ],
  [
    'deleting a skill detaches it from the organization’s agents',
    'agents',
    () => Agent.updateMany({ organizationId: 'org_7', skillIds: 'skl_7' }, { $pull: { skillIds: 'skl_7' } }),
  ],
  [
    'sub-agents of an execution (fan-out count, cancel cascade): by parentExecutionId, organizationId',
    'executions',
    async () => {
      const children = await Execution.find({ parentExecutionId: 'exec-1-70', organizationId: 'org_7' })
        .select({ _id: 1, parentToolCallId: 1 })
        .limit(100)
        .lean();
      expect(children).toHaveLength(TREE - 1);
      // The cascade's own read (none running: nothing to cancel, the client is not called).
      expect(await cancelSubAgents({} as Client, { _id: 'exec-1-70', organizationId: 'org_7' })).toBe(0);
    },
  ],
  [
    'execution tree: by organizationId, rootExecutionId',
    'executions',
    async () => {
      const { all } = await executionTree(auth(7), 'exec-1-75');
      expect(all).toHaveLength(TREE);
    },
  ],
  [
    'webhook delivery log: write an attempt (by _id)',
    'webhook_deliveries',
    () => WebhookDelivery.updateOne({ _id: 'evt_4242' }, { $set: { status: 'failed' } }),
  ],
  [
    'media: first page and count, next page (one organization of 100)',
    'media',
    async () => {
      const first = await listMedia(auth(7), { limit: 20 });
      expect([first.total, first.items.length]).toEqual([MEDIA / ORGS, 20]);
      const next = await listMedia(auth(7), { limit: 20, cursor: first.nextCursor! });
      expect(next.items[0].createdAt.getTime()).toBeLessThan(first.items[19].createdAt.getTime());
    },
  ],
  ['media: a medium by id (read, download, delete)', 'media', () => findMedia(auth(7), 'med_4207')],
  [
    'media of an execution: up to 10 by _id in one $or',
    'media',
    async () =>
      expect(await checkMediaIds(auth(7), ['med_7', 'med_107', 'med_207', 'med_9907'], 'media')).toHaveLength(4),
  ],
  [
    'MCP servers: first page, next page (one organization of 100)',
    'mcp_servers',
    async () => {
      const first = await listMcpServers(auth(7), { limit: 20 });
      expect(first.items).toHaveLength(20);
      const next = await listMcpServers(auth(7), { limit: 20, cursor: first.nextCursor! });
      expect(next.items[0].createdAt.getTime()).toBeLessThan(first.items[19].createdAt.getTime());
    },
  ],
  ['MCP servers: a server by id', 'mcp_servers', () => findMcpServer(auth(7), 'mcp_4207')],
  [
    'MCP servers of an agent: ids and required names in one $or; the agent create / update check',
    'mcp_servers',
    async () => {
      await checkMcpServerIds(auth(7), ['mcp_7', 'mcp_107', 'mcp_207'], 'mcpServerIds');
      const servers = await mcpServersForAgent({ organizationId: 'org_7', mcpServerIds: ['mcp_7', 'mcp_107'] }, [
        { requiredMCPs: ['server-207', 'server-9907'] },
      ]);
      expect(servers.map((d) => d._id)).toEqual(['mcp_7', 'mcp_107', 'mcp_207', 'mcp_9907']);
    },
  ],
  [
    'MCP servers: delete one, detaching it from the organization’s agents',
    'mcp_servers',
    () => deleteMcpServer(auth(7), 'mcp_8807'),
  ],
  [
    'OAuth clients of an organization (GET /api/oauth-clients): its machine clients, its members’ grants',
    'oauth_clients',
    async () => expect(await listOAuthClients('org_7')).toHaveLength(OAUTH_CLIENTS / ORGS + 5),
  ],
  ['OAuth clients: delete one with its grants', 'oauth_clients', () => deleteOAuthClient('org_7', 'oac_9907')],
  [
    'OAuth: revoking a service token revokes its clients and grants',
    'oauth_clients',
    () => revokeOAuthOfToken('tok_7'),
  ],
  ['OAuth grants: of an organization, of a client, of a token, of a family', 'oauth_grants', async () => undefined],
  [
    'workspace size reservation: the highest number, take the next, the open ones, close (one workspace of 100)',
    'workspace_reservations',
    async () => {
      const quota = {
        storage: new LocalDiskStorage(mkdtempSync(path.join(os.tmpdir(), 'quota-'))),
        workspaceMaxBytes: 1_000_000,
        reservationLeaseMs: 60_000,
      };
      const reservation = await reserveWorkspaceBytes(
        quota,
        { organizationId: 'org_7', spaceId: 'spc_r7' },
        { bytes: 10 }
      );
      await reservation.close();
      expect(await WorkspaceReservation.findById(`spc_r7:${RESERVATIONS / 100 + 1}`).lean()).toMatchObject({
        open: false,
      });
    },
  ],
  [
    'spend fold: the pending ledger entries of one organization, then all; by id among the pending (commands/spendFold.ts)',
    'ledger_entries',
    async () => {
      expect(await foldSpend({ organizationId: 'org_7' })).toBe(LEDGER / LEDGER_PENDING / ORGS);
      expect(await foldSpend()).toBe(LEDGER / LEDGER_PENDING - LEDGER / LEDGER_PENDING / ORGS);
      expect(await LedgerEntry.countDocuments({ pending: true })).toBe(0);
    },
  ],
];

if (postgresUrl) {
  describe('every query shape is answered from an index on the embedded database (FerretDB on PostgreSQL)', () => {
    it('no query shape scans its table; the negative control does', async () => {
      const collections = [
        'agents',
        'stream_events',
        'stream_heads',
        'rate_windows',
        'idempotency_records',
        'chat_messages',
        'chats',
        'space_agents',
        'webhook_deliveries',
        'skills',
        'skill_versions',
        'service_events',
        'media',
        'mcp_servers',
        'oauth_clients',
        'oauth_grants',
        'workspace_reservations',
        'executions',
        'ledger_entries',
        'control',
      ];
      const before = await settledStats(collections);
      for (const [name, , run] of shapes) {
        await expect(run().then(() => name)).resolves.toBe(name);
      }
      // Appended events are read back from the index by the next reader.
      expect((await readEvents('exec-125', EVENTS_PER_STREAM)).map((e) => e.seq)).toEqual([EVENTS_PER_STREAM + 1]);
      expect(await control.findOne({ other: 4242 })).toMatchObject({ k: 4242 }); // no index on `other`
      const after = await settledStats(collections);
      const delta = Object.fromEntries(
        collections.map((c) => [
          c,
          { seqScans: after[c].seqScan - before[c].seqScan, indexScans: after[c].idxScan - before[c].idxScan },
        ])
      );
      expect(delta).toEqual({
        agents: { seqScans: 0, indexScans: expect.any(Number) },
        stream_events: { seqScans: 0, indexScans: expect.any(Number) },
        stream_heads: { seqScans: 0, indexScans: expect.any(Number) },
        rate_windows: { seqScans: 0, indexScans: expect.any(Number) },
        idempotency_records: { seqScans: 0, indexScans: expect.any(Number) },
        chat_messages: { seqScans: 0, indexScans: expect.any(Number) },
        chats: { seqScans: 0, indexScans: expect.any(Number) },
        space_agents: { seqScans: 0, indexScans: expect.any(Number) },
        webhook_deliveries: { seqScans: 0, indexScans: expect.any(Number) },
        skills: { seqScans: 0, indexScans: expect.any(Number) },
        skill_versions: { seqScans: 0, indexScans: expect.any(Number) },
        service_events: { seqScans: 0, indexScans: expect.any(Number) },
        executions: { seqScans: 0, indexScans: expect.any(Number) },
        ledger_entries: { seqScans: 0, indexScans: expect.any(Number) },
        media: { seqScans: 0, indexScans: expect.any(Number) },
        mcp_servers: { seqScans: 0, indexScans: expect.any(Number) },
        oauth_clients: { seqScans: 0, indexScans: expect.any(Number) },
        oauth_grants: { seqScans: 0, indexScans: expect.any(Number) },
        workspace_reservations: { seqScans: 0, indexScans: expect.any(Number) },
        control: { seqScans: 1, indexScans: 0 },
      });
      // Every shape touched its table, so each was answered by index scans: at least one per shape.
      const indexed = [
        'agents',
        'stream_events',
        'stream_heads',
        'rate_windows',
        'idempotency_records',
        'chat_messages',
        'chats',
        'space_agents',
        'webhook_deliveries',
        'skills',
        'skill_versions',
        'service_events',
        'media',
        'mcp_servers',
        'oauth_clients',
        'oauth_grants',
        'workspace_reservations',
        'executions',
        'ledger_entries',
      ] as const;
      for (const c of indexed) {
        const uses = shapes.filter(([, coll]) => coll === c).length;
        expect(delta[c].indexScans).toBeGreaterThanOrEqual(uses);
      }
      // The sub-agent and tree shapes fetched about their trees' rows (3 reads of 9 or 10), not the organization's
      // executions: their own indexes bound them, not `organizationId`.
      expect(after.executions.idxFetched - before.executions.idxFetched).toBeLessThan(10 * TREE);
      // The space's chat count fetched about the space's chats (40; 82 rows measured), fewer than its organization's
      // 200 (what the organization's index fetched per read): `{spaceId}` bounds it.
      expect(after.chats.idxFetched - before.chats.idxFetched).toBeLessThan(SPACE_ROWS / ORGS);
    }, 90_000);
  });
} else {
  describe('every query shape is answered from an index on MongoDB', () => {
    it.each(shapes)('%s', async (_name, _collection, run) => {
      await run();
    });

    it('the filters of those shapes have index plans', async () => {
      const plans = await Promise.all([
        Agent.find({ _id: 'agt_1', organizationId: 'org_1' }).explain('queryPlanner'),
        Agent.find({ organizationId: 'org_1', archived: false })
          .sort({ createdAt: -1, _id: -1 })
          .explain('queryPlanner'),
        StreamEvent.find({ _id: 'exec-1:1' }).explain('queryPlanner'),
        StreamHead.find({ _id: 'exec-1' }).explain('queryPlanner'),
        RateWindow.find({ _id: 'org_1:usr_1:0' }).explain('queryPlanner'),
        RateWindow.find({ expiryBucket: 1 }).explain('queryPlanner'),
        IdempotencyRecord.find({ _id: 'org_1:usr_1:0' }).explain('queryPlanner'),
        ChatMessage.find({ chatId: 'chat_7', organizationId: 'org_7' }).sort({ position: 1 }).explain('queryPlanner'),
        WebhookDelivery.find({ organizationId: 'org_7' }).sort({ createdAt: -1, _id: -1 }).explain('queryPlanner'),
        Skill.find({ organizationId: 'org_7', deletedAt: null })
          .sort({ createdAt: -1, _id: -1 })
          .explain('queryPlanner'),
        SkillVersion.find({ skillId: 'skl_7', organizationId: 'org_7' }).sort({ version: -1 }).explain('queryPlanner'),
        Agent.find({ organizationId: 'org_7', skillIds: 'skl_7' }).explain('queryPlanner'),
        StreamEvent.find({ expiryBucket: 1 }).explain('queryPlanner'),
        WebhookDelivery.find({ expiryBucket: 1 }).explain('queryPlanner'),
        ServiceEvent.find({ expiryBucket: 1 }).explain('queryPlanner'),
        Chat.find({ organizationId: 'org_7', spaceId: 'spc_7' }).explain('queryPlanner'),
        Execution.find({ parentExecutionId: 'exec-1-70', organizationId: 'org_7' }).explain('queryPlanner'),
        Execution.find({ organizationId: 'org_7', rootExecutionId: 'exec-1-70' })
          .sort({ createdAt: 1 })
          .explain('queryPlanner'),
        Media.find({ organizationId: 'org_7' }).sort({ createdAt: -1, _id: -1 }).explain('queryPlanner'),
        McpServer.find({ organizationId: 'org_7' }).sort({ createdAt: -1, _id: -1 }).explain('queryPlanner'),
        McpServer.find({ organizationId: 'org_7', name: 'server-7' }).explain('queryPlanner'),
        OAuthClient.find({ organizationId: 'org_7' }).sort({ createdAt: -1 }).explain('queryPlanner'),
        OAuthClient.find({ tokenId: 'tok_7' }).explain('queryPlanner'),
        OAuthGrant.find({ organizationId: 'org_7', clientId: 'oac_7' }).explain('queryPlanner'),
        OAuthGrant.find({ tokenId: 'tok_7' }).explain('queryPlanner'),
        OAuthGrant.find({ familyId: 'grant_7' }).explain('queryPlanner'),
        OAuthClient.find({ expiryBucket: 1 }).explain('queryPlanner'),
        WorkspaceReservation.find({ spaceId: 'spc_r7' }).sort({ seq: -1 }).limit(1).explain('queryPlanner'),
        WorkspaceReservation.find({ spaceId: 'spc_r7', open: true }).sort({ seq: 1 }).explain('queryPlanner'),
        LedgerEntry.find({ pending: true, organizationId: 'org_7' }).explain('queryPlanner'),
        LedgerEntry.find({ pending: true, _id: { $in: ['exec-l7:1'] } }).explain('queryPlanner'),
      ]);
      expect(JSON.stringify(plans)).not.toContain('COLLSCAN');
    });
  });
}
