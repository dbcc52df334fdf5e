/**
 * The one home of claiming an execution: moving it to `running` for the reply that runs it (issue 37, "no claim
 * round trip on an eager start").
 *
 * - **Eager start** (a process that runs a worker starts the execution with eager workflow start, with no concurrency
 *   key and not as a rerun: commands/executionStart.ts): the api inserts the record already `running`, with its
 *   `startedAt` and `eagerClaim: true`, and hands it over here, in this process ({@link handOver}). Its reply's first
 *   attempt, run by this process's worker, takes it ({@link claimExecution}): no claim in the database, no read of the
 *   record. The entry is kept only while the start's first workflow task is this process's (the api takes it back
 *   when the start was not eager, or failed), and for {@link HAND_OVER_MS} at most.
 * - **Every other path** (the entry not in this process, expired or taken back; a later attempt; concurrency keys;
 *   reruns; sub-agents and job iterations, recorded `pending`): one conditional claim in the database, which matches
 *   `pending`, or on a first attempt `running` with `eagerClaim` (an eager start whose reply runs elsewhere, or
 *   again after its process died), and clears the flag. Its answer is the record as it was before, which says
 *   whether the attempt is the first to run the execution (`fresh`: it was `pending`) or follows one that may have
 *   written events (its reply reads the stream back: activities/executionReply.ts).
 * - **A cancel** drops the entry ({@link dropHandOver}), here or over the wake-up channel from another process, so a
 *   reply that has not taken it yet claims in the database and sees `cancelRequestedAt`; one that has took it after
 *   registering for the direct cancel (lib/runningCalls.ts), which stops it.
 */
import { crashPoint, crashPointsArmed } from '../lib/crashPoints';
import { findByIdDirect, findOneAndUpdateDirect } from '../lib/driverOps';
import { onAbortMessage } from '../lib/runningCalls';
import { Execution, type ExecutionDoc } from '../models';

/** How long a record handed over by an eager start waits for its reply's first attempt in this process. */
export const HAND_OVER_MS = 60_000;

/** Records handed over by this process's eager starts, by execution id, oldest first, with when each expires. */
const handedOver = new Map<string, { exec: ExecutionDoc; expiresAt: number }>();
let listening = false;

/**
 * @param exec whether the execution may be claimed by its eager start: started eagerly, with no concurrency key (it
 *   waits for its keys first: activities/executionConcurrency.ts) and not a rerun (its stream holds copied steps).
 * @returns the fields the api's record of such an execution is inserted with: `running` from its creation.
 */
export function eagerClaimFields(exec: { eager: boolean; concurrency: boolean; rerun: boolean }): {
  status?: 'running';
  startedAt?: Date;
  eagerClaim?: true;
} {
  return exec.eager && !exec.concurrency && !exec.rerun
    ? { status: 'running', startedAt: new Date(), eagerClaim: true }
    : {};
}

/**
 * Hands the record of an execution started eagerly by this process to its reply's first attempt (no claim in the
 * database). Entries past their time are dropped on the way.
 * @param exec the record as inserted (`running`, `eagerClaim`).
 * @param now the time (tests).
 */
export function handOver(exec: ExecutionDoc, now = Date.now()): void {
  if (!listening) {
    listening = true;
    // A cancel taken by another process: the reply that has not taken its record yet claims it in the database.
    onAbortMessage(dropHandOver);
  }
  for (const [id, entry] of handedOver) {
    if (entry.expiresAt > now) break;
    handedOver.delete(id);
  }
  handedOver.set(exec._id, { exec: { ...exec }, expiresAt: now + HAND_OVER_MS });
}

/**
 * Takes a hand-over back (the api, when the start was not eager or failed; a cancel).
 * @param executionId the execution.
 * @returns whether it was still here (false: its reply took it, or it expired).
 */
export function dropHandOver(executionId: string): boolean {
  return handedOver.delete(executionId);
}

/**
 * @param executionId the execution.
 * @param now the time (tests).
 * @returns the record handed over for it, unless it expired (once: it is dropped).
 */
function takeHandOver(executionId: string, now: number): ExecutionDoc | undefined {
  const entry = handedOver.get(executionId);
  if (!entry) return undefined;
  handedOver.delete(executionId);
  return entry.expiresAt > now ? entry.exec : undefined;
}

/** What a reply's claim found. */
export interface Claim {
  /** The record (`running` when claimed), or null when there is none. */
  exec: ExecutionDoc | null;
  /** This attempt moved the execution to running (or took its eager start's record): it announces it running. */
  claimed: boolean;
  /** This attempt is the first to run the execution: its stream holds what the api wrote and nothing more. */
  fresh: boolean;
}

/**
 * Claims an execution for a reply's attempt: from this process's hand-over on the first attempt of an eager start,
 * else by one conditional update (the record before it), else reads it.
 * @param executionId the execution.
 * @param attempt the attempt of the reply (1: the first).
 * @param now the time (tests).
 * @returns the record and what the claim says about the attempt.
 */
export async function claimExecution(executionId: string, attempt: number, now = Date.now()): Promise<Claim> {
  const handed = attempt === 1 ? takeHandOver(executionId, now) : undefined;
  if (handed) {
    // The fault tests' point: this process dies holding the only claim, which is in its memory.
    if (crashPointsArmed) await crashPoint('claim:eager');
    return { exec: handed, claimed: true, fresh: true };
  }
  const startedAt = new Date(now);
  const before = await findOneAndUpdateDirect<ExecutionDoc>(
    Execution,
    {
      _id: executionId,
      // Beside the `_id` equality, never around it (docs/query-shapes.md).
      $or: [{ status: 'pending' }, ...(attempt === 1 ? [{ status: 'running', eagerClaim: true }] : [])],
    },
    { $set: { status: 'running', startedAt }, $unset: { eagerClaim: '' } },
    { returnDocument: 'before' }
  );
  if (before) {
    const exec = { ...before, status: 'running', startedAt } as ExecutionDoc;
    delete exec.eagerClaim;
    return { exec, claimed: true, fresh: before.status === 'pending' };
  }
  return { exec: await findByIdDirect<ExecutionDoc>(Execution, executionId), claimed: false, fresh: false };
}

/** Begins the reply of an execution handed over by an eager start, before its workflow task schedules it. */
export type EarlyStart = (executionId: string, limits: { deadlineAt: number; deadlineSeconds: number }) => void;

let earlyStart: EarlyStart | undefined;

/**
 * Registers how this process begins a handed-over execution's reply at once (activities/executionRun.ts: the
 * worker's activities; the last registered in a process that creates several, as tests do).
 * @param start the beginning.
 */
export function onEagerStart(start: EarlyStart): void {
  earlyStart = start;
}

/**
 * An execution this process started eagerly begins its reply now, not when its workflow task has scheduled the local
 * activity (issue 37, time to first token: that takes several turns of the event loop through the SDK); the
 * activity, when it runs here, takes the reply over (activities/executionRun.ts). Without a registered worker,
 * nothing happens and the activity runs the reply.
 * @param executionId the execution, handed over ({@link handOver}) and started eagerly.
 * @param startedAt when its start was sent (its deadline counts from then, as the workflow's from its start).
 * @param deadlineSeconds its deadline.
 */
export function beginEarly(executionId: string, startedAt: number, deadlineSeconds: number): void {
  // Only while the record is still here to take: the early reply takes it at once (synchronously, in its claim), so
  // the activity, if it came first and took it, is never doubled by an early reply claiming in the database.
  const entry = handedOver.get(executionId);
  if (!earlyStart || !entry || entry.expiresAt <= Date.now()) return;
  earlyStart(executionId, { deadlineAt: startedAt + deadlineSeconds * 1000, deadlineSeconds });
}
