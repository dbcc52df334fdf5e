/**
 * What one execution costs us (docs/benchmarks.md "Cost of one execution, shape 3"): the database operations (every
 * mongoose collection call, counted with mongoose's debug hook over the api and a service-process worker in this
 * process) and the Temporal history of a JSON execution of a short reply in a new conversation, started eagerly. The
 * lists are the counts written in docs/benchmarks.md: an operation added to the hot path fails this test.
 */
import mongoose from 'mongoose';
import { temporal } from '@temporalio/proto';
import { executionWorkflowId } from '../../../workflows/ids';
import { buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { v1As } from '../../helpers/v1';
import { useExecutionStack } from '../../helpers/worker';

useTestDatabase();
// Caches that stay warm for the test's length (a loaded machine can take more than the default second between the
// warm-up and the counted execution).
const stack = useExecutionStack('cost', { DEFAULT_MODEL: 'claude-test', CACHE_TTL_MS: '60000' }, { service: true });

it('a JSON execution in a new conversation: its database operations and history events', async () => {
  const org = await buildOrg();
  const as = v1As(stack.t, org.apiToken);
  const agent = await as.post('/agents', { name: 'Echo', systemPrompt: 'x' });
  // Warm: the caches of read-mostly records (token, membership, agent) as under load.
  expect((await as.post(`/agents/${agent.body.id}/execute`, { message: 'warm' })).status).toBe(200);

  const ops: string[] = [];
  mongoose.set('debug', (collection: string, method: string) => void ops.push(`${collection}.${method}`));
  let res;
  try {
    res = await as.post(`/agents/${agent.body.id}/execute`, { message: '[chunks:20] hi' });
    // The last writes of the finish (the webhook outbox, the chat) may land just after the answer.
    await new Promise((r) => setTimeout(r, 500));
  } finally {
    mongoose.set('debug', false);
  }
  expect(res.status).toBe(200);
  // Reads of records kept in the processes' caches (token, membership, agent, skills) are left out: a cold cache adds them.
  const cached = /^(api_tokens|memberships|agents|skills|spaces)\./;
  const counted = ops.filter((o) => !o.startsWith('event_wakeup_targets.') && !cached.test(o));
  const history = await stack.t.temporal.client.workflow
    .getHandle(executionWorkflowId(res.body.executionId))
    .fetchHistory();
  const events = (history.events ?? []).map((e) => temporal.api.enums.v1.EventType[e.eventType ?? 0]);
  // 14 operations (docs/benchmarks.md, "Cost of one execution: 20 to 17", then "the cost ledger: 17 to 19", then
  // "19 to 17", then "17 to 14"): api 3 (chat, created showing `working` and holding its session, taken by the
  // execution: no session document, commands/conversations.ts; the meta event, the stream's first event alone,
  // without a head; execution, holding the user message: no chat message of its own, commands/chatMessageReads.ts),
  // reply 5 (claim, the chat's running service event, deltas + the head raised on the execution record, usage),
  // finish 4 (no read of the execution: the reply handed it over; the outcome, holding the reply: no chat message of
  // its own either; then the chat's status, the session freed and the history in one write of the chat; the final
  // events written beside the first writes, their head raised by the outcome write: an execution's stream keeps its
  // head on its record, commands/streamHeads.ts; the two service events in one insert).
  expect(counted.sort()).toEqual(
    [
      // The chat, holding its session (the api's `sessions.insertOne` is gone).
      'chats.insertOne',
      'stream_events.insertMany',
      // The execution, with the user message (the api's `chat_messages.insertOne` is gone).
      'executions.insertOne',
      'executions.findOneAndUpdate',
      'service_events.insertOne',
      'stream_events.insertMany',
      // The deltas' head, on the execution record (was `stream_heads.updateOne`).
      'executions.updateOne',
      'executions.updateOne',
      // The chat's status, its session freed, the history (the finish's `sessions.updateOne` is gone).
      'chats.updateOne',
      // The outcome, holding the reply (the finish's `chat_messages.updateOne` is gone), raising the head of the
      // final events (the finish's `stream_heads.updateOne` is gone).
      'executions.updateOne',
      'stream_events.insertMany',
      'service_events.insertMany',
      // The cost ledger (issue 39, docs/spend.md): the model call's entry (its own collection, append-only, keyed
      // by execution and call so a retry never doubles it) and the day's rollup the usage report and the budgets
      // read (an `$inc` that only a new entry makes). Budgets are checked from the process's cache: no read.
      'ledger_entries.insertOne',
      'spend_rollups.updateOne',
    ].sort()
  );
  // One workflow task holding the two local activities (shape 3): 7 events (shape 2: 14).
  expect(events).toEqual([
    'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED',
    'EVENT_TYPE_WORKFLOW_TASK_SCHEDULED',
    'EVENT_TYPE_WORKFLOW_TASK_STARTED',
    'EVENT_TYPE_WORKFLOW_TASK_COMPLETED',
    'EVENT_TYPE_MARKER_RECORDED',
    'EVENT_TYPE_MARKER_RECORDED',
    'EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED',
  ]);
});
