/**
 * The scale phase of `npm run bench`: does an operation cost the same with 50,000 documents stored as with 1,000?
 * The agents collection is filled (directly, spread over 100 other organizations) to 1,000 and then to 50,000
 * documents; at each size the same API operations run one after the other, and their latencies are compared.
 * The bench organization holds the same 100 agents at both sizes, so its list pages are the same work: the creates
 * go to a second organization of their own (creating 200 agents in the listed one made its list read three times
 * as many rows at the second size: FerretDB sorts a tenant's matching rows itself, docs/query-shapes.md).
 */
import { performance } from 'node:perf_hooks';
import { bootstrapOrganization } from '../../commands/bootstrap';
import { Agent } from '../../models';
import { ApiClient } from './client';

export const SCALE_SIZES = [1_000, 50_000] as const;
const OTHER_ORGS = 100;
const OWN_AGENTS = 100;
const RUNS = 200;

/** Latencies of one operation at each size. */
export interface ScaleOperation {
  name: string;
  /** Milliseconds per run, for each of SCALE_SIZES. */
  samples: number[][];
}

function fakeAgent(n: number, organizationId: string, userId: string): Record<string, unknown> {
  const at = new Date(1_700_000_000_000 + n);
  return {
    _id: `agt_scale${n}`,
    organizationId,
    userId,
    ownerId: userId,
    name: `agent ${n}`,
    role: 'Assistant',
    systemPrompt: 'Be brief.',
    visibility: 'organization',
    model: null,
    skillIds: [],
    advanced_tools: [],
    tags: [],
    spaceId: `spc_scale${n}`,
    chatId: `chat_scale${n}`,
    archived: false,
    archivedAt: null,
    createdAt: at,
    updatedAt: at,
  };
}

/** Inserts agents until the collection holds `total`; the first ones go to the bench organization. */
async function fillTo(total: number, org: { organizationId: string; userId: string }): Promise<void> {
  let n = await Agent.estimatedDocumentCount();
  let own = await Agent.countDocuments({ organizationId: org.organizationId });
  while (n < total) {
    const batch = Array.from({ length: Math.min(2000, total - n) }, (_, i) => {
      const k = n + i;
      if (own < OWN_AGENTS) {
        own++;
        return fakeAgent(k, org.organizationId, org.userId);
      }
      return fakeAgent(k, `org_scale${k % OTHER_ORGS}`, `usr_scale${k % OTHER_ORGS}`);
    });
    await Agent.collection.insertMany(batch as never[], { ordered: false });
    n += batch.length;
  }
}

async function timed(runs: number, op: (i: number) => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await op(i);
    out.push(performance.now() - t0);
  }
  return out;
}

function expectStatus(what: string, status: number, want: number): void {
  if (status !== want) throw new Error(`scale phase: ${what} answered ${status}`);
}

/**
 * @param client the bench organization's client.
 * @param org the bench organization.
 * @param agentId an agent of the bench organization.
 * @param say progress printer.
 * @returns each operation's latencies at each size.
 */
export async function scalePhase(
  client: ApiClient,
  org: { organizationId: string; userId: string },
  agentId: string,
  say: (line: string) => void
): Promise<ScaleOperation[]> {
  const boot = await bootstrapOrganization({ org: 'Bench writers', email: 'bench-writers@example.com' });
  const writer = new ApiClient(client.baseUrl, boot.apiToken);
  const ops: Array<[string, (i: number) => Promise<void>]> = [
    [
      'GET /api/v1/agents/{id}',
      async () => expectStatus('get', (await client.json('GET', `/api/v1/agents/${agentId}`)).status, 200),
    ],
    [
      'PATCH /api/v1/agents/{id}',
      async (i) =>
        expectStatus(
          'patch',
          (await client.json('PATCH', `/api/v1/agents/${agentId}`, { role: `Role ${i}` })).status,
          200
        ),
    ],
    [
      'GET /api/v1/agents?limit=20 (100 in the org)',
      async () => expectStatus('list', (await client.json('GET', '/api/v1/agents?limit=20')).status, 200),
    ],
    [
      'POST /api/v1/agents (in another organization)',
      async (i) =>
        expectStatus(
          'create',
          (await writer.json('POST', '/api/v1/agents', { name: `Scale ${i}`, systemPrompt: 'Be brief.' })).status,
          200
        ),
    ],
  ];
  const samples: number[][][] = ops.map(() => []);
  for (const size of SCALE_SIZES) {
    say(`scale: filling the agents collection to ${size} documents`);
    await fillTo(size, org);
    say(`scale: ${ops.length} operations × ${RUNS} at ${size} documents`);
    for (const [k, [, op]] of ops.entries()) samples[k].push(await timed(RUNS, op));
  }
  writer.close();
  return ops.map(([name], k) => ({ name, samples: samples[k] }));
}
