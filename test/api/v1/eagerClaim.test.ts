/**
 * No claim round trip on an eager start (commands/executionClaim.ts, issue 37): an execution this process starts
 * eagerly is recorded `running` and handed to its reply in memory; every other path claims it in the database once,
 * and says whether the attempt is the first to run it.
 */
import mongoose from 'mongoose';
import { NativeConnection } from '@temporalio/worker';
import { Client } from '@temporalio/client';
import { ADOPT_WITHIN_MS } from '../../../activities/executionRun';
import { deliveredText } from '../../../activities/executionEvents';
import {
  beginEarly,
  claimExecution,
  dropHandOver,
  eagerClaimFields,
  handOver,
  HAND_OVER_MS,
} from '../../../commands/executionClaim';
import { readEvents, readWritten } from '../../../commands/eventLog';
import { repliesBegunEarly } from '../../../lib/metrics';
import { executionStartOptions } from '../../../workflows/executionStart';
import { abortReply } from '../../../commands/executions';
import { temporalExtensions } from '../../../lib/dataConverter';
import { temporalConnectionOptions } from '../../../lib/temporal';
import { Execution, type ExecutionDoc } from '../../../models';
import { buildOrg, recordExecutionLike } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { v1As } from '../../helpers/v1';
import { useExecutionStack } from '../../helpers/worker';

useTestDatabase();
const stack = useExecutionStack('eager-claim', { DEFAULT_MODEL: 'claude-test' }, { service: true });

/**
 * @param work what runs while the executions' operations are counted.
 * @returns the operations on `executions`, in order.
 */
async function executionOps(work: () => Promise<unknown>): Promise<string[]> {
  const ops: string[] = [];
  mongoose.set('debug', (collection: string, method: string) => {
    if (collection === 'executions') ops.push(method);
  });
  try {
    await work();
  } finally {
    mongoose.set('debug', false);
  }
  return ops;
}

/**
 * @param id the record's id.
 * @param fields its status and flags.
 * @returns a stored record of an execution, as the api writes it.
 */
async function storedExecution(id: string, fields: Record<string, unknown>): Promise<ExecutionDoc> {
  const doc = {
    _id: id,
    organizationId: 'org_x',
    agentId: 'agt_x',
    userId: 'usr_x',
    chatId: 'cht_x',
    sessionId: 'ses_x',
    spaceId: 'spc_x',
    turn: 1,
    input: { message: 'hi' },
    provider: 'anthropic',
    model: 'claude-test',
    rootExecutionId: id,
    ...fields,
  };
  await Execution.create(doc);
  return (await Execution.findById(id).lean<ExecutionDoc>())!;
}

let agentId: string;
let as: ReturnType<typeof v1As>;
beforeAll(async () => {
  const org = await buildOrg();
  as = v1As(stack.t, org.apiToken);
  agentId = (await as.post('/agents', { name: 'Echo', systemPrompt: 'x' })).body.id;
  // Warm: the caches of read-mostly records.
  expect((await as.post(`/agents/${agentId}/execute`, { message: 'warm' })).status).toBe(200);
});

it('an eager start: recorded running, its reply takes the record in memory, no claim in the database', async () => {
  let res!: { status: number; body: { executionId: string; result: string } };
  const ops = await executionOps(async () => {
    res = await as.post(`/agents/${agentId}/execute`, { message: '[chunks:3] hi' });
  });
  expect(res.status).toBe(200);
  expect(res.body.result).toBe('tok1 tok2 tok3 ');
  // The api's insert and the finish's outcome: no claim (findOneAndUpdate), no read of the record.
  expect(ops.filter((o) => o !== 'updateOne')).toEqual(['insertOne']);
  const exec = await Execution.findById(res.body.executionId).lean<ExecutionDoc>();
  expect(exec).toMatchObject({ status: 'completed', result: 'tok1 tok2 tok3 ' });
  expect(exec!.startedAt).toBeInstanceOf(Date);
  expect(exec!.startedAt!.getTime()).toBeGreaterThanOrEqual(exec!.createdAt.getTime());
  // Taken: nothing left in the hand-over.
  expect(dropHandOver(res.body.executionId)).toBe(false);
}, 60_000);

it('a start that is not eager: recorded pending, its reply claims it in the database once', async () => {
  const own = stack.t.temporal.eager;
  stack.t.temporal.eager = undefined;
  let res!: { status: number; body: { executionId: string; result: string } };
  try {
    const ops = await executionOps(async () => {
      res = await as.post(`/agents/${agentId}/execute`, { message: '[chunks:2] hi' });
    });
    expect(res.status).toBe(200);
    expect(res.body.result).toBe('tok1 tok2 ');
    expect(ops.filter((o) => o === 'findOneAndUpdate')).toHaveLength(1);
  } finally {
    stack.t.temporal.eager = own;
  }
  const exec = await Execution.findById(res.body.executionId).lean<ExecutionDoc & { eagerClaim?: boolean }>();
  expect(exec).toMatchObject({ status: 'completed' });
  expect(exec!.startedAt).toBeInstanceOf(Date);
  expect(exec!.eagerClaim).toBeUndefined();
}, 60_000);

it('an eager start the server refused: the record is taken back, and the reply claims it in the database once', async () => {
  const connection = await NativeConnection.connect(temporalConnectionOptions(stack.t.config));
  const own = stack.t.temporal.eager;
  // A client on a connection with no worker: the start asks for an eager task and gets none; the worker polling the
  // queue runs it.
  stack.t.temporal.eager = new Client({
    connection,
    namespace: stack.t.config.temporalNamespace,
    ...temporalExtensions(stack.t.config).client,
  });
  let res!: { status: number; body: { executionId: string; result: string } };
  try {
    const ops = await executionOps(async () => {
      res = await as.post(`/agents/${agentId}/execute`, { message: '[chunks:2] hi' });
    });
    expect(res.status).toBe(200);
    expect(res.body.result).toBe('tok1 tok2 ');
    expect(ops.filter((o) => o === 'findOneAndUpdate')).toHaveLength(1);
  } finally {
    stack.t.temporal.eager = own;
    await connection.close();
  }
  const exec = await Execution.findById(res.body.executionId).lean<ExecutionDoc & { eagerClaim?: boolean }>();
  expect(exec).toMatchObject({ status: 'completed' });
  expect(exec!.eagerClaim).toBeUndefined();
}, 60_000);

it('a claim in the database: pending or an eager record on a first attempt, fresh only when it was pending', async () => {
  // An eager start whose process died after its reply took the record (the record is all another worker finds).
  await storedExecution('exec-1-eagerdied', { status: 'running', startedAt: new Date(), eagerClaim: true });
  // A later attempt does not claim it: it follows one of this process.
  expect(await claimExecution('exec-1-eagerdied', 2)).toMatchObject({ claimed: false, fresh: false });
  const again = await claimExecution('exec-1-eagerdied', 1);
  expect(again).toMatchObject({ claimed: true, fresh: false, exec: { _id: 'exec-1-eagerdied', status: 'running' } });
  expect((again.exec as { eagerClaim?: boolean }).eagerClaim).toBeUndefined();
  expect(
    ((await Execution.findById('exec-1-eagerdied').lean()) as { eagerClaim?: boolean } | null)?.eagerClaim
  ).toBeUndefined();
  // Claimed once: a repeat reads it.
  expect(await claimExecution('exec-1-eagerdied', 1)).toMatchObject({
    claimed: false,
    fresh: false,
    exec: { status: 'running' },
  });

  await storedExecution('exec-1-pending', {});
  expect(await claimExecution('exec-1-pending', 1)).toMatchObject({
    claimed: true,
    fresh: true,
    exec: { status: 'running' },
  });
  expect((await Execution.findById('exec-1-pending').lean())!.startedAt).toBeInstanceOf(Date);

  // A start that failed: never claimed.
  await storedExecution('exec-1-failed', { status: 'failed', eagerClaim: true, error: { code: 'start_failed' } });
  expect(await claimExecution('exec-1-failed', 1)).toMatchObject({
    claimed: false,
    exec: { status: 'failed', error: { code: 'start_failed' } },
  });
  expect(await claimExecution('exec-1-none', 1)).toEqual({ exec: null, claimed: false, fresh: false });
});

it('the hand-over: taken once on a first attempt, expired after a minute, dropped by a cancel', async () => {
  const now = Date.now();
  const exec = await storedExecution('exec-2-handed', { status: 'running', startedAt: new Date(), eagerClaim: true });
  handOver(exec, now);
  const ops = await executionOps(async () => {
    // A later attempt never takes it.
    expect(await claimExecution('exec-2-handed', 2, now)).toMatchObject({ claimed: false });
    expect(await claimExecution('exec-2-handed', 1, now + 1000)).toMatchObject({
      claimed: true,
      fresh: true,
      exec: { _id: 'exec-2-handed', status: 'running' },
    });
  });
  expect(ops).toEqual(['findOneAndUpdate', 'findOne']); // the second attempt's, none for the first
  expect(dropHandOver('exec-2-handed')).toBe(false);

  // Expired: the reply claims in the database (it was recorded with the flag, so it is not fresh).
  const late = await storedExecution('exec-2-late', { status: 'running', startedAt: new Date(), eagerClaim: true });
  handOver(late, now);
  expect(await claimExecution('exec-2-late', 1, now + HAND_OVER_MS + 1)).toMatchObject({ claimed: true, fresh: false });
  // An expired entry is dropped when another is handed over.
  const old = await storedExecution('exec-2-old', { status: 'running', eagerClaim: true });
  handOver(old, now);
  handOver({ ...old, _id: 'exec-2-new' }, now + HAND_OVER_MS + 1);
  expect(dropHandOver('exec-2-old')).toBe(false);
  expect(dropHandOver('exec-2-new')).toBe(true);

  // A cancel before the reply took its record: the reply claims in the database, and sees the cancel there.
  const cancelled = await storedExecution('exec-2-cancel', { status: 'running', eagerClaim: true });
  handOver(cancelled);
  await abortReply('exec-2-cancel');
  const claim = await claimExecution('exec-2-cancel', 1);
  expect(claim).toMatchObject({ claimed: true, fresh: false });
  expect(claim.exec!.cancelRequestedAt).toBeInstanceOf(Date);
});

it('a start that fails: the record is taken back and marked start_failed, 503', async () => {
  const own = stack.t.temporal.eager!;
  // The engine refuses the start (as when it is away): through the eager client, so the record is recorded running.
  stack.t.temporal.eager = new Proxy(own, {
    get: (target, prop) =>
      prop === 'workflow'
        ? {
            start: async () => {
              throw new Error('engine away');
            },
          }
        : prop === 'withDeadline'
          ? (_deadline: number, fn: () => Promise<unknown>) => fn()
          : Reflect.get(target, prop),
  });
  let res!: { status: number };
  const ops = await executionOps(async () => {
    try {
      res = await as.post(`/agents/${agentId}/execute`, { message: 'never runs' });
    } finally {
      stack.t.temporal.eager = own;
    }
  });
  expect(res.status).toBe(503);
  // Inserted (running, with the flag), then failed by the conditional update that matches it, then the head of its
  // stream raised over the `error` event (on the record: commands/streamHeads.ts).
  expect(ops).toEqual(['insertOne', 'updateOne', 'updateOne']);
  const failed = await Execution.findOne({ 'input.message': 'never runs' }).lean<ExecutionDoc>();
  expect(failed).toMatchObject({
    status: 'failed',
    error: { message: 'Could not start the execution', code: 'start_failed' },
  });
  // Recorded by the eager start (the flag), and failed all the same.
  expect((failed as { eagerClaim?: boolean }).eagerClaim).toBe(true);
  expect(dropHandOver(failed!._id)).toBe(false);
  // Its workflow, if the start reached the engine after all, finds it failed: never claimed.
  expect(await claimExecution(failed!._id, 1)).toMatchObject({ claimed: false, exec: { status: 'failed' } });
}, 60_000);

describe('a reply begun at its eager start (activities/executionRun.ts)', () => {
  const begun = async (): Promise<number> => (await repliesBegunEarly.get()).values[0]?.value ?? 0;

  it('begins before its local activity, which takes it over: one reply, the record taken from memory', async () => {
    const before = await begun();
    const res = await as.post(`/agents/${agentId}/execute`, { message: '[chunks:4] early' });
    expect(res.status).toBe(200);
    expect(res.body.result).toBe('tok1 tok2 tok3 tok4 ');
    expect(await begun()).toBe(before + 1);
    const exec = (await Execution.findById(res.body.executionId).lean<ExecutionDoc>())!;
    expect(exec).toMatchObject({ status: 'completed', result: 'tok1 tok2 tok3 tok4 ' });
    expect(Object.keys(exec.usageByAttempt ?? {})).toHaveLength(1);
  }, 60_000);

  it('stops when no activity takes it over in time; the activity then continues what it wrote', async () => {
    // A record handed over as an eager start does, whose workflow starts only after the early reply gave up.
    const first = (await Execution.findOne({ agentId }).lean<ExecutionDoc>())!;
    const exec = await recordExecutionLike(first, {
      turn: 1,
      message: '[chunks:40][slow:100] late',
      ...eagerClaimFields({ eager: true, concurrency: false, rerun: false }),
    });
    const id = exec._id;
    handOver(exec);
    const before = await begun();
    beginEarly(id, Date.now(), 60);
    expect(await begun()).toBe(before + 1);
    // Past the time to take it over, the early reply stopped midway (40 chunks at 100 ms each take 4 s).
    await new Promise((r) => setTimeout(r, ADOPT_WITHIN_MS + 500));
    const written = deliveredText(await readWritten(id));
    expect(written.length).toBeGreaterThan(0);
    expect(written.length).toBeLessThan('tok1 '.length * 40);
    const handle = await stack.t.temporal.client.workflow.start('agentExecution', {
      ...executionStartOptions({
        executionId: id,
        organizationId: first.organizationId,
        agentId,
        deadlineSeconds: 60,
        memo: {},
      }),
      taskQueue: stack.t.config.temporalTaskQueue,
    });
    expect(await handle.result()).toMatchObject({ status: 'completed' });
    const done = (await Execution.findById(id).lean<ExecutionDoc>())!;
    const expected = Array.from({ length: 40 }, (_, i) => `tok${i + 1} `).join('');
    // The whole reply once: what the early reply wrote, then the rest (the activity read it back and continued).
    expect(done).toMatchObject({ status: 'completed', result: expected });
    expect(deliveredText(await readEvents(id))).toBe(expected);
    // Both runs' counts are kept (the provider billed both).
    expect(Object.keys(done.usageByAttempt ?? {})).toHaveLength(2);
  }, 60_000);
});
