/**
 * The one home of an execution workflow's start options (issue 37 lever 8): the api's start (commands/executionStart.ts
 * startAdmitted), a sub-agent's (startExecutionWorkflow, from its parent's tool call) and a job iteration's child
 * (workflows/job.ts) all take them from {@link executionStartOptions}, so they cannot drift apart. Safe in workflow code
 * (ids, search-attribute keys and plain data only).
 */
import type { SearchAttributePair } from '@temporalio/common';
import type { AgentExecutionInput } from './definitions';
import { EXECUTION_SHAPE, EXECUTION_TASK_TIMEOUT, executionWorkflowId } from './ids';
import { agentIdKey, organizationIdKey, workKindKey } from './searchAttributes';

/** What an execution's start is made of. */
export interface ExecutionStartInput {
  executionId: string;
  organizationId: string;
  agentId: string;
  /** The reply's overall deadline (EXECUTION_DEADLINE_SECONDS). */
  deadlineSeconds?: number;
  /** Ids and the model only, never user text (docs/decisions.md "Observability: private payloads"). */
  memo: Record<string, string | null | undefined>;
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
}

/**
 * @param input the execution's ids, deadline and memo.
 * @returns the start options of its workflow `execution-<executionId>`.
 */
export function executionStartOptions(input: ExecutionStartInput): ExecutionStartOptions {
  return {
    workflowId: executionWorkflowId(input.executionId),
    args: [{ executionId: input.executionId, deadlineSeconds: input.deadlineSeconds, shape: EXECUTION_SHAPE }],
    workflowTaskTimeout: EXECUTION_TASK_TIMEOUT,
    typedSearchAttributes: [
      { key: organizationIdKey, value: input.organizationId },
      { key: agentIdKey, value: input.agentId },
      { key: workKindKey, value: 'execution' },
    ],
    memo: input.memo,
  };
}
