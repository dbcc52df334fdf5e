/**
 * The token counts of an execution's reply [docs/decisions.md "Usage"]: saved per attempt on the execution
 * (`usageByAttempt.<attempt>`) while the reply runs, so a run cut short still counts what the provider billed, and
 * summed over the attempts when the execution finishes (activities/executionFinish.ts).
 */
import { randomBytes } from 'node:crypto';
import type { HeadFields } from '../commands/eventLog';
import { updateOneDirect } from '../lib/driverOps';
import type { Logger } from '../lib/logger';
import { Execution } from '../models';

/** Token counts of one provider attempt, as saved on the execution (`usageByAttempt.<attempt>`). */
export interface AttemptUsage {
  inputTokens: number;
  outputTokens: number;
  /** false while the provider has not reported its final output count: outputTokens counts the text deltas. */
  final: boolean;
}

/**
 * The key of one run of the reply in `usageByAttempt`: the activity attempt for a regular activity (shapes 2 and
 * older); for a local one, whose attempt count starts again when another worker takes its workflow task over, the
 * attempt and a random suffix, so that every run the provider billed keeps its own count.
 * @param info the activity's info.
 * @returns the key.
 */
export function attemptKey(info: { attempt: number; isLocal: boolean }): number | string {
  return info.isLocal ? `${info.attempt}-${randomBytes(4).toString('hex')}` : info.attempt;
}

/**
 * @param byAttempt the counts saved per attempt.
 * @returns their sum.
 */
export function totalUsage(byAttempt: Record<string, { inputTokens?: number; outputTokens?: number }>): {
  inputTokens: number;
  outputTokens: number;
} {
  let inputTokens = 0;
  let outputTokens = 0;
  for (const u of Object.values(byAttempt ?? {})) {
    inputTokens += u.inputTokens ?? 0;
    outputTokens += u.outputTokens ?? 0;
  }
  return { inputTokens, outputTokens };
}

/**
 * Saves one attempt's token counts on the execution as they become known, so that an attempt cut short (its
 * worker killed) still counts what it was billed for: with the next raise of the stream's head (the reply's first
 * delta carries the input count the provider reported before it: {@link headFields}, no write of its own), else
 * every `saveMs` (USAGE_SAVE_MS), and at the end. Until the provider reports its final output count (Anthropic and
 * OpenAI do so only at the end of a reply), the output count is the number of text deltas received: each carries at
 * least one token, so it never counts more than was generated [docs/decisions.md "Usage"].
 * @param executionId the execution.
 * @param attempt the activity attempt (the key in `usageByAttempt`).
 * @param log where a failed save is reported.
 * @param saveMs how often counts not yet saved are saved when no head raise took them (USAGE_SAVE_MS): what a worker
 *   crash can lose of an attempt's counts.
 * @returns report/delta/headFields/close.
 */
export function trackUsage(executionId: string, attempt: number | string, log: Logger, saveMs: number) {
  let current: AttemptUsage = { inputTokens: 0, outputTokens: 0, final: false };
  // Counts of the attempt's earlier model calls (a tool loop makes several).
  const before = { inputTokens: 0, outputTokens: 0 };
  let deltas = 0;
  let dirty = false;
  let chain: Promise<void> = Promise.resolve();
  // Saves of their own not yet settled: a head raise takes no counts meanwhile, so none lands after a newer one.
  let saving = 0;
  let closed = false;
  const counts = (): AttemptUsage => ({
    inputTokens: before.inputTokens + current.inputTokens,
    outputTokens: before.outputTokens + current.outputTokens,
    final: current.final,
  });
  const save = (): Promise<void> => {
    if (!dirty) return chain;
    dirty = false;
    const snapshot = counts();
    saving++;
    chain = chain
      .then(() =>
        updateOneDirect(Execution, { _id: executionId }, { $set: { [`usageByAttempt.${attempt}`]: snapshot } })
      )
      .then(() => undefined)
      .catch((e: unknown) => log.warn({ err: e, executionId, attempt }, 'could not record usage'))
      .finally(() => void saving--);
    return chain;
  };
  const timer = setInterval(() => void save(), saveMs);
  return {
    report(inputTokens?: number, outputTokens?: number): void {
      if (inputTokens !== undefined) current.inputTokens = inputTokens;
      if (outputTokens !== undefined) {
        current.outputTokens = outputTokens;
        current.final = true;
      }
      // Saved with the next head raise (the first delta's), else by the timer: no write of its own.
      dirty = true;
    },
    delta(): void {
      deltas++;
      if (!current.final) {
        current.outputTokens = deltas;
        dirty = true;
      }
    },
    /**
     * The counts not saved yet, for the update that raises the stream's head (the reply's writer asks right before
     * it: commands/eventLog.ts `appendEvents`). Saves of the tracker's own that come later wait for that update, so
     * the stored counts never go back.
     * @returns the fields to set, or undefined when there is nothing to save, or a save of its own is still settling.
     */
    headFields(): HeadFields | undefined {
      if (!dirty || closed || saving > 0) return undefined;
      dirty = false;
      const snapshot = counts();
      let landed!: () => void;
      const raised = new Promise<void>((resolve) => (landed = resolve));
      chain = chain.then(() => raised);
      return {
        set: { [`usageByAttempt.${attempt}`]: snapshot },
        settled(written: boolean): void {
          if (!written) dirty = true;
          landed();
        },
      };
    },
    /** @returns the counts of the model call under way: its output is the provider's count, else its deltas. */
    call(): { inputTokens: number; outputTokens: number } {
      return { inputTokens: current.inputTokens, outputTokens: current.outputTokens };
    },
    /** The model call ended: the next call's counts add to it. */
    nextCall(): void {
      before.inputTokens += current.inputTokens;
      before.outputTokens += current.outputTokens;
      current = { inputTokens: 0, outputTokens: 0, final: false };
      deltas = 0;
      dirty = true;
    },
    /** Saves the counts (an attempt that failed or was cut short); after {@link handOver} it does nothing. */
    async close(): Promise<void> {
      clearInterval(timer);
      if (closed) return;
      closed = true;
      dirty = true;
      await save();
    },
    /**
     * The reply is complete: the counts go to finishExecution with the reply, which writes them with the outcome
     * (one round trip fewer); saves still in flight land first.
     * @returns the attempt's counts.
     */
    async handOver(): Promise<AttemptUsage> {
      clearInterval(timer);
      closed = true;
      await chain;
      return counts();
    },
  };
}
