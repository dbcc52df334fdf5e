/**
 * A worker process that dies (SIGKILL to itself) in the gap a finish leaves between its outcome write and the write
 * that frees the chat (activities/executionFinish.ts): the crash the turn take-over of commands/conversations.ts is
 * for. Run as an entrypoint (test/helpers/processes.ts `spawnScript`); otherwise the project's worker.
 */
import { Chat } from '../../models';

const collection = Chat.collection as unknown as { updateOne: (...args: unknown[]) => Promise<unknown> };
const updateOne = collection.updateOne.bind(collection);
collection.updateOne = (filter: unknown, update: unknown, ...rest: unknown[]) => {
  const frees = (update as { $set?: Record<string, unknown> }).$set?.activeExecutionId === null;
  if (frees && (filter as Record<string, unknown>).activeExecutionId) {
    process.stdout.write('dying before the chat is freed\n');
    process.kill(process.pid, 'SIGKILL');
    return new Promise(() => undefined);
  }
  return updateOne(filter, update, ...rest);
};
void import('../../worker/index');
