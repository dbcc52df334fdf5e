/**
 * Group commit of inserts (lib/groupCommit.ts), on real servers: the inserts of several callers into one collection
 * in one tick go as one insertMany, each caller learns its own document's outcome (a duplicate key reaches exactly
 * its caller), and a MongoDB server killed while a batch is on its way leaves no caller told "stored" for a document
 * that is not. This file runs its own MongoDB-compatible server (FerretDB on PostgreSQL, as the test servers) so
 * that it can kill it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import mongoose from 'mongoose';
import { loadToolConfig } from '../../lib/config';
import { connectMongo, disconnectMongo, insertDocument, insertDocumentsOnce, isDuplicateKey } from '../../lib/mongo';
import { setGroupCommit, type GroupCommitWindow } from '../../lib/groupCommit';
import { ChatMessage } from '../../models';
import { ensureMongoServer } from '../../scripts/servers/binaries';
import { startMongoStack, type MongoStack } from '../../scripts/servers';
import { freePort, startMongo, type RunningServer } from '../../scripts/servers/launch';
import { isDependencyOutage } from '../../api/middlewares/errors';
import { uniqueDbName } from '../helpers/mongo';

let stack: MongoStack;
let mongo: RunningServer;
let dataDir: string;
let kind: string;
beforeAll(async () => {
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'aas-group-commit-'));
  const server = await ensureMongoServer(loadToolConfig(), () => undefined);
  kind = server.kind;
  stack = await startMongoStack(server, dataDir, await freePort());
  mongo = stack.mongo;
  await connectMongo(stack.mongo.address, { dbName: uniqueDbName() });
});
afterAll(async () => {
  await disconnectMongo().catch(() => undefined);
  await mongo?.stop();
  await stack?.postgres?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});
afterEach(() => {
  mongoose.set('debug', false);
  setGroupCommit('tick');
});

let n = 0;
/** A chat message's fields, with a fresh id unless given one. */
function message(id = `m${++n}`, content = 'hi'): Record<string, unknown> {
  return {
    _id: id,
    organizationId: 'o',
    chatId: `c${n}`,
    sessionId: 's',
    executionId: 'e',
    role: 'user',
    content,
    position: 0,
  };
}

/** Records the driver operations of mongoose's collections while `fn` runs. */
async function opsOf(fn: () => Promise<unknown>): Promise<string[]> {
  const ops: string[] = [];
  mongoose.set('debug', (collection: string, method: string) => void ops.push(`${collection}.${method}`));
  try {
    await fn();
  } finally {
    mongoose.set('debug', false);
  }
  return ops;
}

it.each<[string, GroupCommitWindow]>([
  ['one tick', 'tick'],
  ['a 2 ms window', 2],
])('the inserts of several callers in %s: one insertMany, every document stored', async (_name, window) => {
  setGroupCommit(window);
  const fields = Array.from({ length: 5 }, () => message());
  let results: Record<string, unknown>[] = [];
  const ops = await opsOf(async () => {
    results = await Promise.all(fields.map((f) => insertDocument(ChatMessage, f)));
  });
  expect(ops).toEqual(['chat_messages.insertMany']);
  expect(results.map((r) => r._id)).toEqual(fields.map((f) => f._id));
  const stored = await ChatMessage.collection.find({ _id: { $in: fields.map((f) => f._id) } } as never).toArray();
  expect(stored).toHaveLength(5);
  expect(stored.every((d) => d.createdAt instanceof Date)).toBe(true);
});

it('a duplicate key reaches only the caller of that document; the others are stored', async () => {
  const taken = message();
  await insertDocument(ChatMessage, taken);
  const before = message();
  const after = message();
  let settled: PromiseSettledResult<unknown>[] = [];
  const ops = await opsOf(async () => {
    settled = await Promise.allSettled([
      insertDocument(ChatMessage, before),
      insertDocument(ChatMessage, { ...message(), _id: taken._id }),
      insertDocument(ChatMessage, after),
    ]);
  });
  expect(ops).toEqual(['chat_messages.insertMany']);
  expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  const err = (settled[1] as PromiseRejectedResult).reason;
  expect(isDuplicateKey(err)).toBe(true);
  expect(err).toBeInstanceOf(mongoose.mongo.MongoServerError);
  expect(await ChatMessage.collection.countDocuments({ _id: { $in: [before._id, after._id] } } as never)).toBe(2);
  // The stored one is the first writer's, untouched.
  expect((await ChatMessage.findById(taken._id).lean())?.chatId).toBe(taken.chatId);
});

it("insertDocumentsOnce in another caller's batch: its repeats are in place, the other caller's duplicate is the other's", async () => {
  const kept = message();
  await insertDocument(ChatMessage, kept);
  const fresh = message();
  const [once, single] = await Promise.allSettled([
    insertDocumentsOnce(ChatMessage, [kept, fresh]),
    insertDocument(ChatMessage, kept),
  ]);
  expect(once.status).toBe('fulfilled');
  expect(single.status).toBe('rejected');
  expect(isDuplicateKey((single as PromiseRejectedResult).reason)).toBe(true);
  expect(await ChatMessage.collection.countDocuments({ _id: { $in: [kept._id, fresh._id] } } as never)).toBe(2);
});

it('off: each insert is its own command, as before', async () => {
  setGroupCommit('off');
  const ops = await opsOf(() =>
    Promise.all([insertDocument(ChatMessage, message()), insertDocument(ChatMessage, message())])
  );
  expect(ops).toEqual(['chat_messages.insertOne', 'chat_messages.insertOne']);
});

it('a batch waits for the one in flight, but one stuck on a hung server holds later inserts back only briefly', async () => {
  const commands: string[] = [];
  let onCommand = (): void => undefined;
  mongoose.set('debug', (collection: string, method: string) => {
    commands.push(`${collection}.${method}`);
    onCommand();
  });
  const sent = (count: number): Promise<void> =>
    new Promise((resolve) => {
      onCommand = () => void (commands.length >= count && resolve());
      onCommand();
    });
  mongo.child.kill('SIGSTOP'); // FerretDB hung, connections open
  try {
    const first = insertDocument(ChatMessage, message());
    await sent(1);
    // The next insert waits for the first's answer, which does not come: it is sent anyway (GROUP_COMMIT_HOLD_MS).
    const second = insertDocument(ChatMessage, message());
    await sent(2);
    expect(commands).toEqual(['chat_messages.insertOne', 'chat_messages.insertOne']);
    mongo.child.kill('SIGCONT');
    await expect(Promise.all([first, second])).resolves.toHaveLength(2);
  } finally {
    mongo.child.kill('SIGCONT');
  }
});

it('the server killed while a batch is on its way: every caller sees an outage error, and no document is half there', async () => {
  // Large documents, so that the batch is still being read or written when the server dies.
  const fields = Array.from({ length: 60 }, () => message(undefined, 'x'.repeat(64 * 1024)));
  const ids = fields.map((f) => f._id);
  mongoose.set('debug', (_collection: string, method: string) => {
    if (method === 'insertMany') setImmediate(() => mongo.child.kill('SIGKILL'));
  });
  const settled = await Promise.allSettled(fields.map((f) => insertDocument(ChatMessage, f)));
  mongoose.set('debug', false);
  expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(0);
  for (const s of settled) {
    const reason = (s as PromiseRejectedResult).reason;
    expect(isDependencyOutage(reason)).toBe(true);
  }

  await mongo.stop();
  mongo = await startMongo({
    server: await ensureMongoServer(loadToolConfig(), () => undefined),
    dataDir: path.join(dataDir, 'mongo'),
    port: Number(new URL(stack.mongo.address).port),
    postgresUrl: stack.postgres?.address,
  });
  const stored = await ChatMessage.collection.countDocuments({ _id: { $in: ids } } as never);
  // On FerretDB the batch (up to 100 documents) is one PostgreSQL transaction: all of it or none. A mongod may have
  // stored a part (unordered inserts), none of which any caller was told was stored.
  if (kind === 'ferretdb') expect([0, ids.length]).toContain(stored);
  // Nothing was lost that a caller was told: the callers retry, as they do after any outage, and every one lands.
  const retried = await Promise.allSettled(fields.map((f) => insertDocument(ChatMessage, f)));
  expect(retried.every((r) => r.status === 'fulfilled' || isDuplicateKey(r.reason))).toBe(true);
  expect(await ChatMessage.collection.countDocuments({ _id: { $in: ids } } as never)).toBe(ids.length);
});
