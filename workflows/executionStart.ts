/**
 * The one home of an execution workflow's start options (issue 37 lever 8): the api's start (commands/executionStart.ts
 * startAdmitted), a sub-agent's (startExecutionWorkflow, from its parent's tool call) and a job iteration's child
 * (workflows/job.ts) all take them from {@link executionStartOptions}, so they cannot drift apart. Safe in workflow code
 * (ids, search-attribute keys and plain data only).
 */
import type { Priority, SearchAttributePair } from '@temporalio/common';
import type { AgentExecutionInput } from './definitions';
import { EXECUTION_SHAPE, EXECUTION_TASK_TIMEOUT, executionWorkflowId } from './ids';
import { agentIdKey, organizationIdKey, workKindKey } from './searchAttributes';

/**
 * Temporal priority keys of the service's work (1 first, 5 last; the server's default is 3): a person waits for an
 * interactive execution (execute, chat message, MCP, and a sub-agent, whose parent waits holding its slot); a job's
 * iterations run in the background; a mission run's job is the most patient (docs/fairness.md).
 */
export const PRIORITY_KEYS = { interactive: 2, job: 3, mission: 4 } as const;

/**
 * @param kind what the work is.
 * @param organizationId its organization: the fairness key (the server shares a backlogged task queue between keys
 *   in proportion to their weights, when matching.enableFairness is on).
 * @param weight the organization's weight (commands/fairShare.ts); absent: the server's default (1).
 * @returns the Temporal priority of a start (workflow, child or schedule action; children and activities inherit it).
 */
export function workPriority(kind: keyof typeof PRIORITY_KEYS, organizationId: string, weight?: number): Priority {
  return {
    priorityKey: PRIORITY_KEYS[kind],
    fairnessKey: organizationId,
    ...(weight !== undefined ? { fairnessWeight: weight } : {}),
  };
}

/** What an execution's start is made of. */
export interface ExecutionStartInput {
  executionId: string;
  organizationId: string;
  agentId: string;
  /** The reply's overall deadline (EXECUTION_DEADLINE_SECONDS). */
  deadlineSeconds?: number;
  /** Ids and the model only, never user text (docs/decisions.md "Observability: private payloads"). */
  memo: Record<string, string | null | undefined>;
  /** Its Temporal priority ({@link workPriority}); absent: inherited (a job iteration's child). */
  priority?: Priority;
  /** It has concurrency keys to hold before its reply (AgentExecutionInput `concurrency`). */
  concurrency?: boolean;
}

/** The options every start of `agentExecution` shares (the caller adds its own: task queue, eager start, parent policy). */
export interface ExecutionStartOptions {
  workflowId: string;
  args: [AgentExecutionInput];
  /**
   * A dead process is noticed within this time, and another worker continues the reply (shape 3 runs the whole reply in
   * its first workflow task: docs/decisions.md "Execution shape 3"). Every start carries it, a sub-agent's included.
   */
  workflowTaskTimeout: typeof EXECUTION_TASK_TIMEOUT;
  typedSearchAttributes: SearchAttributePair[];
  memo: Record<string, string | null | undefined>;
  priority?: Priority;
}

/**
 * @param input the execution's ids, deadline and memo.
 * @returns the start options of its workflow `execution-<executionId>`.
 */
export function executionStartOptions(input: ExecutionStartInput): ExecutionStartOptions {
  return {
    workflowId: executionWorkflowId(input.executionId),
    args: [
      {
        executionId: input.executionId,
        deadlineSeconds: input.deadlineSeconds,
        shape: EXECUTION_SHAPE,
        ...(input.concurrency ? { concurrency: true } : {}),
      },
    ],
    workflowTaskTimeout: EXECUTION_TASK_TIMEOUT,
    typedSearchAttributes: [
      { key: organizationIdKey, value: input.organizationId },
      { key: agentIdKey, value: input.agentId },
      { key: workKindKey, value: 'execution' },
    ],
    memo: input.memo,
    ...(input.priority ? { priority: input.priority } : {}),
  };
}
