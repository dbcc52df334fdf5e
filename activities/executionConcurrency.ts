/**
 * Concurrency keys of executions (issue 39 point 4; docs/fairness.md "Concurrency keys"; docs/decisions.md
 * "Concurrency keys: a slots document per key"). An execution with keys (Execution.concurrency: the agent's limit,
 * then the caller's key) holds every one of them before its reply runs:
 *
 * - **claim** (activity claimConcurrency, from its workflow): per key in order, one atomic update adds it to the key's
 *   `holders` when they are fewer than the limit and nobody waits before it; otherwise it joins the key's `waiting`
 *   list (once) and the execution shows `queued` (its record, and a `queued` event in its stream). The workflow then
 *   waits for a signal, or re-checks every CONCURRENCY_RECHECK: a lost signal delays, never blocks.
 * - **release** (the finish, whatever the outcome, cancelled while queued included): `$pull` from `holders` and
 *   `waiting` of every key (idempotent: a repeated release frees nothing twice), then the head of each key's line
 *   is signalled.
 * - A holder whose execution ended without releasing (its workflow terminated by an operator) is pruned by the next
 *   claim that finds the key full: one read by id per holder.
 *
 * - **admission**: while it waits, a queued execution gives back the admission slot its api process took to start it
 *   (lib/executionAdmission.ts `executionQueued`), and takes one again through the same fair line once it holds its
 *   keys (`readmitQueued`, in the process that runs its workflow; a worker-only process admits nothing).
 *
 * Everything is in MongoDB and Temporal, nothing in a process's memory: any number of service hosts share a limit,
 * and a worker that dies loses nothing (its execution's workflow resumes elsewhere and still releases).
 */
import { Context } from '@temporalio/activity';
import mongoose from 'mongoose';
import { appendEvents, lastSeq, readEvents } from '../commands/eventLog';
import { executionQueued, readmitQueued } from '../lib/executionAdmission';
import { executionsQueuedForKey } from '../lib/metrics';
import { isDuplicateKey } from '../lib/mongo';
import type { Logger } from '../lib/logger';
import { ConcurrencySlot, Execution, TERMINAL_EXECUTION_STATUSES, type ExecutionDoc } from '../models';
import { concurrencyGrantedSignal } from '../workflows/definitions';
import { executionWorkflowId } from '../workflows/ids';

/** One key an execution holds or waits for. */
export interface ConcurrencyClaim {
  key: string;
  limit: number;
}

/**
 * @param organizationId the organization.
 * @param key the key (`agent:<id>` or `key:<concurrencyKey>`).
 * @returns the slots document's id.
 */
export const slotId = (organizationId: string, key: string): string => `${organizationId}:${key}`;

async function ensureSlot(id: string, organizationId: string): Promise<void> {
  try {
    await ConcurrencySlot.updateOne(
      { _id: id },
      { $setOnInsert: { organizationId, holders: [], waiting: [] } },
      { upsert: true }
    );
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
  }
}

/** One atomic claim: room under the limit, and nobody waiting before this execution. */
async function tryClaim(id: string, executionId: string, limit: number): Promise<boolean> {
  const res = await ConcurrencySlot.updateOne(
    {
      _id: id,
      // Fewer holders than the limit, and nobody waiting before this execution (our own operators on typed values).
      [`holders.${limit - 1}`]: mongoose.trusted({ $exists: false }),
      $or: [{ waiting: mongoose.trusted({ $size: 0 }) }, { 'waiting.0': executionId }],
    },
    { $addToSet: { holders: executionId }, $pull: { waiting: executionId }, $set: { limit } }
  );
  return res.modifiedCount === 1 || res.matchedCount === 1;
}

/** Removes the holders of a key whose executions ended (a workflow terminated without its finish). */
async function pruneEnded(id: string): Promise<void> {
  const slot = await ConcurrencySlot.findById(id).lean();
  for (const holder of slot?.holders ?? []) {
    const exec = await Execution.findById(holder).select({ status: 1 }).lean<Pick<ExecutionDoc, 'status'>>();
    if (!exec || TERMINAL_EXECUTION_STATUSES.includes(exec.status as never))
      await ConcurrencySlot.updateOne({ _id: id }, { $pull: { holders: holder } });
  }
}

/** Signals the first in a key's line when the key has room (best effort: the waiter re-checks by itself). */
async function wakeNext(id: string, log: Logger): Promise<void> {
  const slot = await ConcurrencySlot.findById(id).lean();
  const next = slot?.waiting[0];
  if (!slot || !next || slot.holders.length >= (slot.limit ?? 1)) return;
  await Context.current()
    .client.workflow.getHandle(executionWorkflowId(next))
    .signal(concurrencyGrantedSignal)
    .catch((err: unknown) => log.info({ err, executionId: next }, 'could not signal a queued execution'));
}

/** Shows an execution as queued: its record, and one `queued` event in its stream. */
async function showQueued(exec: ExecutionDoc, waitingFor: string): Promise<void> {
  await Execution.updateOne({ _id: exec._id, status: 'pending' }, { $set: { status: 'queued' } });
  const events = await readEvents(exec._id);
  if (events.some((e) => e.event === 'queued')) return;
  executionsQueuedForKey.inc({ kind: waitingFor.startsWith('agent:') ? 'agent' : 'key' });
  await appendEvents(exec._id, [
    {
      seq: (await lastSeq(exec._id)) + 1,
      event: 'queued',
      data: { executionId: exec._id, key: waitingFor.replace(/^(agent|key):/, ''), kind: waitingFor.split(':')[0] },
    },
  ]);
}

/**
 * @param log the activities' logger.
 * @returns claimConcurrency and the release the finish calls.
 */
export function createConcurrencyActivities(log: Logger) {
  return {
    /**
     * Claims an execution's keys in order.
     * @param executionId the execution.
     * @returns true when it holds them all (or has none, or already ended: the reply then sees why); false when it
     *   waits in a key's line.
     */
    async claimConcurrency(executionId: string): Promise<boolean> {
      const exec = await Execution.findById(executionId).lean<ExecutionDoc>();
      if (!exec || TERMINAL_EXECUTION_STATUSES.includes(exec.status as never)) return true;
      for (const { key, limit } of (exec.concurrency ?? []) as ConcurrencyClaim[]) {
        const id = slotId(exec.organizationId, key);
        await ensureSlot(id, exec.organizationId);
        if (await tryClaim(id, executionId, limit)) {
          // The next in line may fit too (a limit above 1).
          await wakeNext(id, log);
          continue;
        }
        // Already a holder: a claim run again (the workflow task retried on another worker after a crash).
        if (await ConcurrencySlot.exists({ _id: id, holders: executionId })) continue;
        await pruneEnded(id);
        if (await tryClaim(id, executionId, limit)) continue;
        await ConcurrencySlot.updateOne(
          { _id: id, waiting: mongoose.trusted({ $ne: executionId }) },
          { $push: { waiting: executionId } }
        );
        // A holder may have left between the claim and joining the line: claim once more now that it waits.
        if (await tryClaim(id, executionId, limit)) continue;
        await showQueued(exec, key);
        // While it waits it holds no admission slot of this process (lib/executionAdmission.ts).
        executionQueued(executionId);
        return false;
      }
      // It waited: it takes an admission slot again, in turn with the requests in line, before it runs.
      if (exec.status === 'queued') await readmitQueued(executionId, exec.organizationId);
      await Execution.updateOne({ _id: executionId, status: 'queued' }, { $set: { status: 'pending' } });
      return true;
    },
  };
}

/**
 * Gives back every key of an execution (its finish, whatever the outcome) and wakes the next in each line.
 * Idempotent: `$pull` of an id that is not there changes nothing.
 * @param exec the execution.
 * @param log the logger.
 */
export async function releaseConcurrency(
  exec: Pick<ExecutionDoc, '_id' | 'organizationId' | 'concurrency'>,
  log: Logger
): Promise<void> {
  for (const { key } of (exec.concurrency ?? []) as ConcurrencyClaim[]) {
    const id = slotId(exec.organizationId, key);
    await ConcurrencySlot.updateOne({ _id: id }, { $pull: { holders: exec._id, waiting: exec._id } });
    await wakeNext(id, log);
  }
}
