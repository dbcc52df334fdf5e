/**
 * An execution: one run of an agent on one user message. Written by the api at creation (pending; running when it
 * is started eagerly: commands/executionClaim.ts) and then only by the execution workflow's activities (running →
 * completed | failed | cancelled).
 *
 * Optional fields without a value (`error`, `modelNote`, `parentExecutionId`, `parentToolCallId`, `taskId`, `rerunOf`,
 * `jobId`) are not stored: no `null` default, and commands/executionStart.ts `recordPendingExecution` leaves them
 * out; every reader (presenters/execution.ts among them) reads a missing one as null, as MongoDB's `{field: null}`
 * matches it. A FerretDB row stores each field's name twice (the value, and its type in `$s`).
 */
import mongoose, { type InferSchemaType } from 'mongoose';

/** `queued`: waiting for a concurrency key (docs/fairness.md "Concurrency keys"); it becomes pending when it holds them. */
export const EXECUTION_STATUSES = ['pending', 'queued', 'running', 'completed', 'failed', 'cancelled'] as const;
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];
/** What an execution's status says, for the API's description (docs/decisions.md "Executions"). */
export const EXECUTION_STATUS_DESCRIPTION =
  '`pending` while its workflow starts, `queued` while it waits for a concurrency key, `running` once a worker runs it ' +
  '(from its creation when the process that took the request starts it eagerly: no concurrency key, not a rerun), ' +
  'then `completed`, `failed` or `cancelled`';
export const TERMINAL_EXECUTION_STATUSES: readonly ExecutionStatus[] = ['completed', 'failed', 'cancelled'];

const schema = new mongoose.Schema(
  {
    _id: { type: String, required: true },
    organizationId: { type: String, required: true },
    agentId: { type: String, required: true },
    /** Caller who started it. */
    userId: { type: String, required: true },
    chatId: { type: String, required: true },
    sessionId: { type: String, required: true },
    spaceId: { type: String, required: true },
    /** Position of this turn in its session (1-based). */
    turn: { type: Number, required: true },
    status: { type: String, enum: EXECUTION_STATUSES, default: 'pending' },
    input: {
      message: { type: String, required: true },
      /** Media sent to the model with the message (ids; the bytes are read at model-call time). */
      mediaIds: { type: [String], default: undefined },
    },
    /** Final reply; on failure or cancellation, the partial text delivered so far. */
    result: { type: String, default: null },
    /** Why it failed or was cancelled; absent while it has not (read as null). */
    error: { type: new mongoose.Schema({ message: String, code: String }, { _id: false }) },
    provider: { type: String, required: true },
    model: { type: String, required: true },
    /** Why the built-in provider was used, when it was a fallback. */
    modelNote: { type: String },
    /** Token usage per provider attempt, keyed by attempt number (idempotent under activity retries). */
    usageByAttempt: { type: mongoose.Schema.Types.Mixed, default: {} },
    usage: {
      inputTokens: { type: Number, default: 0 },
      outputTokens: { type: Number, default: 0 },
    },
    /**
     * The execution above this one in the tree: the execution whose `delegate_to_agent` call started it (a
     * sub-agent, commands/subAgents.ts), or a job's previous iteration.
     */
    parentExecutionId: { type: String },
    rootExecutionId: { type: String, required: true },
    /** A sub-agent's: the parent's tool call that started it (its `toolUseId`). */
    parentToolCallId: { type: String },
    /** How many sub-agent delegations lie between this execution and a top-level one (0: started by a client). */
    depth: { type: Number, default: 0 },
    /**
     * Usage of the sub-agents whose result this execution took, by child execution id: `usage` includes it
     * [docs/decisions.md "Sub-agents"].
     */
    childUsage: { type: mongoose.Schema.Types.Mixed, default: undefined },
    taskId: { type: String },
    /**
     * The concurrency keys it must hold before it runs, claimed in this order (models/ConcurrencySlot.ts): the
     * agent's limit first, then the caller's key. Absent: none.
     */
    concurrency: {
      type: [new mongoose.Schema({ key: String, limit: Number }, { _id: false })],
      default: undefined,
    },
    /** Which endpoint started it. */
    source: { type: String, enum: ['v1', 'client', 'chat', 'job', 'mcp', 'subagent'], default: 'v1' },
    /**
     * A rerun's origin (POST /api/v1/executions/{id}/rerun): the execution rerun and the step it was rerun from; the
     * steps before it were copied into this execution's stream and are replayed, not run again
     * [docs/decisions.md "Fork and rerun"]. Null otherwise.
     */
    rerunOf: { type: new mongoose.Schema({ executionId: String, fromStep: Number }, { _id: false }) },
    /** The job whose iteration this execution is (source `job`). */
    jobId: { type: String },
    /** The mission whose run's job this execution is an iteration of (its budgets apply: docs/spend.md). */
    missionId: { type: String, default: undefined },
    /**
     * Caps of this run alone (the execute body's `maxTokens` / `maxCostUsd`, docs/spend.md): the run stops at its next
     * model call once its ledger total reaches one. Unset: no cap of its own.
     */
    runCap: {
      type: new mongoose.Schema({ maxTokens: Number, maxCostUsd: Number }, { _id: false }),
      default: undefined,
    },
    /**
     * Seq of the chat stream (`chat:<chatId>`) after which this execution's chat events go: the session's
     * `chatStreamSeq` when it took the session (activities/chatStream.ts).
     */
    chatSeqBase: { type: Number, default: 0 },
    /**
     * The api created the chat with this execution, already showing `working` (commands/executionStart.ts): the reply
     * does not write the chat's status when it starts. Unset otherwise.
     */
    chatShowsWorking: { type: Boolean },
    /**
     * Its session's state is on its chat (models/Chat.ts `turns`, `activeExecutionId`, `history`), not in a
     * `sessions` document: set on executions recorded since (docs/decisions.md "The session on the chat").
     */
    sessionOnChat: { type: Boolean },
    /** The `x-request-id` of the request that started it (a job's iteration: the job's) [docs/decisions.md "Observability: request ids"]. */
    requestId: { type: String, default: null },
    /**
     * The head of the execution's stream (commands/streamHeads.ts): every event up to it is written; 0 while the stream
     * holds its `meta` event at most (on a record that holds its `meta`, 0 and 1 say the same). Absent on executions
     * recorded before it (their heads are in `stream_heads`).
     */
    streamSeq: { type: Number, default: 0 },
    /**
     * Its stream's `meta` event (seq 1) is made from this record (commands/executionMeta.ts), not stored: set on
     * executions recorded since (docs/decisions.md "The stream's meta event on the execution record"). Unset on
     * those recorded before, whose `meta` is stored.
     */
    metaOnRecord: { type: Boolean },
    /**
     * The seq of its stream's first final event (the reply's held-back end, the assistant message and `result`; or
     * `error`), which are made from this record (commands/executionFinal.ts), not stored: set by the finish of an
     * execution recorded with `metaOnRecord` (docs/decisions.md "The stream's final events on the execution record").
     * Unset while it runs, and on executions finished before, whose final events are stored.
     */
    finalFrom: { type: Number },
    /** Where, in `result`, the text delta made of the reply's held-back end starts (with `finalFrom`; unset: none). */
    heldFrom: { type: Number },
    startedAt: { type: Date, default: null },
    /**
     * Recorded `running` by an eager start, whose reply's first attempt takes the record from the api's process
     * without a claim in the database (commands/executionClaim.ts); cleared by a claim in the database. Unset otherwise.
     */
    eagerClaim: { type: Boolean },
    /**
     * When the cancel endpoint was called (unset before): what a process asked over the wake-up channel to abort
     * the running reply checks, and what a reply starting after the cancel sees (lib/runningCalls.ts).
     */
    cancelRequestedAt: { type: Date },
    completedAt: { type: Date, default: null },
  },
  { timestamps: true, versionKey: false }
);
schema.index({ organizationId: 1, createdAt: -1, _id: -1 });
schema.index({ organizationId: 1, agentId: 1, createdAt: -1, _id: -1 });
schema.index({ rootExecutionId: 1 });
// A chat's user messages, one page (commands/chatMessageReads.ts): its leading field bounds the read to one chat.
schema.index({ chatId: 1, turn: 1 });
// The runs of a task (GET /api/v1/executions?taskId=): the task bounds the query.
schema.index({ taskId: 1, organizationId: 1, createdAt: -1, _id: -1 });
// A parent's sub-agents (fan-out count, cancel cascade): bounded by the parent [docs/query-shapes.md].
schema.index({ parentExecutionId: 1, organizationId: 1 });

export type ExecutionDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date; updatedAt: Date };
export const Execution = mongoose.model('Execution', schema, 'executions');
