/**
 * Activities of the agentExecution workflow: generateReply (the model loop, activities/executionReply.ts),
 * finishExecution (the outcome, activities/executionFinish.ts) and runExecution (both in one local activity, shape 4:
 * activities/executionRun.ts). All are idempotent under Temporal's at-least-once
 * execution: status moves are conditional, events have deterministic seqs, messages deterministic ids.
 */
import type { Client } from '@temporalio/client';
import type { EventDeps } from '../commands/serviceEvents';
import type { Config } from '../lib/config';
import type { Logger } from '../lib/logger';
import { onAbortRequest } from '../lib/runningCalls';
import { Execution } from '../models';
import { createConcurrencyActivities } from './executionConcurrency';
import { createFinishExecution, HandedOver } from './executionFinish';
import { createGenerateReply } from './executionReply';
import { createRunExecution } from './executionRun';

export interface ExecutionActivityDeps extends EventDeps {
  logger: Logger;
  config: Readonly<Config>;
  /**
   * The service process's client on its worker's connection, through which its api starts executions eagerly
   * (worker/create.ts `runInProcessWorker`): their replies begin at the start (activities/executionRun.ts). Absent in
   * a worker-only process.
   */
  eagerClient?: Client;
}

/**
 * @param deps logger and configuration (provider keys).
 * @returns the execution activities.
 */
export function createExecutionActivities(deps: ExecutionActivityDeps) {
  const log = deps.logger.child({ component: 'executions' });
  // What a completed local reply hands to the finish that follows it in this process.
  const handedOver = new HandedOver();

  // A cancel taken by another process reaches a reply running here over the wake-up channel; it is acted on once the
  // record confirms it (lib/runningCalls.ts).
  onAbortRequest(
    async (executionId) =>
      !!(await Execution.findById(executionId).select({ cancelRequestedAt: 1 }).lean())?.cancelRequestedAt,
    (err) => log.warn({ err }, 'cannot confirm a cancel request')
  );

  const generateReply = createGenerateReply(deps, log, handedOver);
  const finishExecution = createFinishExecution(deps, log, handedOver);
  return {
    generateReply,
    finishExecution,
    runExecution: createRunExecution(generateReply, finishExecution, log, deps.eagerClient),
    ...createConcurrencyActivities(log),
  };
}

export type ExecutionActivities = ReturnType<typeof createExecutionActivities>;
