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
  // The spend fold (commands/spendFold.ts) runs off the execution's path, once per FOLD_DELAY_MS for every entry
  // written meanwhile, so whether one lands in this window is timing: its operations are told apart by what they
  // name (the entries still `pending`, the rollup's `lastFold`) and left out; the fold's own test counts them.
  const ofFold = (collection: string, method: string, args: unknown[]): boolean =>
    (collection === 'ledger_entries' &&
      method !== 'insertOne' &&
      JSON.stringify(args[0] ?? {}).includes('"pending":true')) ||
    (collection === 'spend_rollups' && JSON.stringify(args).includes('lastFold'));
  mongoose.set('debug', (collection: string, method: string, ...args: unknown[]) => {
    if (!ofFold(collection, method, args)) ops.push(`${collection}.${method}`);
  });
  // The answer comes from the execution's stream (commands/executions.ts `awaitExecution`): no long poll of Temporal for
  // the workflow's result (`GetWorkflowExecutionHistory`) on the api's connection.
  const resultPoll = jest.spyOn(stack.t.temporal.connection.workflowService, 'getWorkflowExecutionHistory');
  let res;
  let resultPolls = -1;
  try {
    res = await as.post(`/agents/${agent.body.id}/execute`, { message: '[chunks:20][whole] hi' });
    resultPolls = resultPoll.mock.calls.length;
    // The last writes of the finish (the webhook outbox, the chat) may land just after the answer: counted until the
    // workflow has completed (this wait's own long poll is not the api's).
    await stack.t.temporal.client.workflow.getHandle(executionWorkflowId(res.body.executionId)).result();
  } finally {
    mongoose.set('debug', false);
    resultPoll.mockRestore();
  }
  expect(res.status).toBe(200);
  expect(resultPolls).toBe(0);
  // Reads of records kept in the processes' caches (token, membership, agent, skills) are left out: a cold cache adds them.
  const cached = /^(api_tokens|memberships|agents|skills|spaces)\./;
  const counted = ops.filter((o) => !o.startsWith('event_wakeup_targets.') && !cached.test(o));
  const history = await stack.t.temporal.client.workflow
    .getHandle(executionWorkflowId(res.body.executionId))
    .fetchHistory();
  const events = (history.events ?? []).map((e) => temporal.api.enums.v1.EventType[e.eventType ?? 0]);
  // 7 operations (docs/benchmarks.md, "Cost of one execution: 20 to 17", then "the cost ledger: 17 to 19", then "19 to
  // 17", then the cuts of 2026-12-02/03: the spend rollup folded off the path -1, the reply's end written with the
  // finish -2, the session on the chat -2, the reply on the execution record -1, the input tokens with the head raise
  // -1, the meta event on the record -1, no claim on an eager start -1, the final events on the record -1): api 2, side by side (chat, created showing `working` and
  // holding its session, taken by the execution: no session document, commands/conversations.ts; execution, holding
  // the user message: no chat message of its own, commands/chatMessageReads.ts, and its stream's `meta` event: none
  // stored, commands/executionMeta.ts; recorded `running`: the eager start claims it), reply 1 (no claim: the api
  // handed the record over in this process, commands/executionClaim.ts; the chat's running service event; its text
  // held back, handed to the finish; its token counts, no save of their own: they ride the first head raise of a
  // reply that writes deltas, activities/executionUsage.ts `headFields`, and go with the finish here), finish 3 (no
  // read of the execution: the reply handed it over; no final events stored, the reply's held end among them; the
  // outcome, holding the reply, marking the final events it holds (commands/executionFinal.ts) and raising their
  // head: an execution's stream keeps its head on its record, commands/streamHeads.ts; then the chat's status, the
  // session freed and the history in one write of the chat; the two service events in one insert), and the cost
  // ledger's entry.
  expect(counted.sort()).toEqual(
    [
      // The chat, holding its session (the api's `sessions.insertOne` is gone).
      'chats.insertOne',
      // The execution, with the user message (the api's `chat_messages.insertOne` is gone) and its stream's `meta`
      // event (the api's `stream_events.insertMany` is gone: commands/executionMeta.ts).
      'executions.insertOne',
      // No claim (the reply's `executions.findOneAndUpdate` is gone): an eager start records the execution `running`
      // and hands it to its reply in memory (commands/executionClaim.ts).
      'service_events.insertOne',
      // No deltas' insert and head raise of the reply's own: the reply's text, still buffered when the model's stream
      // ended, is held back and handed to the finish with its final events (docs/benchmarks.md "The reply's end
      // written with the finish"), which are all made from the record (commands/executionFinal.ts). No usage save either (the reply's `executions.updateOne` is gone): the input
      // tokens ride a head raise, here the finish's outcome (docs/benchmarks.md "The input tokens with the head
      // raise").
      // The chat's status, its session freed, the history (the finish's `sessions.updateOne` is gone).
      'chats.updateOne',
      // The outcome, holding the reply (the finish's `chat_messages.updateOne` is gone), raising the head of the
      // final events (the finish's `stream_heads.updateOne` is gone).
      // The outcome marks the final events its record holds, the reply's held-back end with them (the finish's
      // `stream_events.insertMany` is gone: commands/executionFinal.ts).
      'executions.updateOne',
      'service_events.insertMany',
      // The cost ledger (issue 39, docs/spend.md): the model call's entry (its own collection, keyed by execution
      // and call so a retry never doubles it). The day's rollup the usage report and the budgets read is folded
      // from the entries off the execution's path (issue 37: `spend_rollups.updateOne` is gone, commands/spendFold.ts).
      // Budgets are checked from the process's cache: no read.
      'ledger_entries.insertOne',
    ].sort()
  );
  // One workflow task holding one local activity, the reply and its finish (shape 4): 6 events (shape 3: 7, shape 2: 14).
  expect(events).toEqual([
    'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED',
    'EVENT_TYPE_WORKFLOW_TASK_SCHEDULED',
    'EVENT_TYPE_WORKFLOW_TASK_STARTED',
    'EVENT_TYPE_WORKFLOW_TASK_COMPLETED',
    'EVENT_TYPE_MARKER_RECORDED',
    'EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED',
  ]);
});
