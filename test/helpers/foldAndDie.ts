/**
 * A process that folds the ledger's pending entries (commands/spendFold.ts) and SIGKILLs itself at a chosen point,
 * as a crash would (test/commands/spendFold.test.ts): `node --import tsx test/helpers/foldAndDie.ts <point>`, with
 * MONGODB_URI naming the test's database. Points: `before-rollup` (the rollup's write is about to be sent: it never
 * is), `after-rollup` (the rollup is written, the entries' marks are about to be removed: they never are); any other
 * word folds to the end. A second argument, a time in ms since the epoch: the fold starts then (after `ready`), so
 * that two processes fold at once. Prints `folded <n>` if the point was never reached.
 */
import { writeSync } from 'node:fs';
import mongoose from 'mongoose';
import { foldSpend } from '../../commands/spendFold';
import { connectMongo } from '../../lib/mongo';
import '../../models';

async function main(): Promise<void> {
  const point = process.argv[2];
  await connectMongo(process.env.MONGODB_URI!);
  // mongoose calls the debug hook just before it hands the command to the driver.
  mongoose.set('debug', (collection: string, method: string) => {
    const rollupWrite = collection === 'spend_rollups' && (method === 'insertOne' || method === 'updateOne');
    const unmark = collection === 'ledger_entries' && method === 'updateMany';
    if ((point === 'before-rollup' && rollupWrite) || (point === 'after-rollup' && unmark)) {
      writeSync(1, `dying at ${point}\n`);
      process.kill(process.pid, 'SIGKILL');
    }
  });
  const startAt = Number(process.argv[3] ?? 0);
  writeSync(1, 'ready\n');
  if (startAt > Date.now()) await new Promise((r) => setTimeout(r, startAt - Date.now()));
  const n = await foldSpend();
  process.stdout.write(`folded ${n}\n`);
  process.exit(0);
}

void main();
