/**
 * Replay: execution workflows recorded by earlier code still replay on the current code (a worker that picks up a
 * running execution after an upgrade must not fail it with a nondeterminism error).
 *
 * fixtures/execution-history-legacy.bin: the history of a JSON execution recorded by the code of 4e09113, before
 * the input `shape` (its patch markers, search-attribute upserts and deadline timer; encoded
 * temporal.api.history.v1.History). fixtures/execution-history-shape2-*.json: a completed and a cancelled execution
 * of shape 2 (the model call a regular activity), recorded by the code of 16eda23 (JSON of the History message as
 * protobufjs writes it: enums and 64-bit numbers as strings, bytes in base64). An execution started with shape 2
 * (running at an upgrade) still runs to its end. fixtures/execution-history-shape3-completed.json: a completed
 * execution of shape 3 recorded by the code of b5c037d, whose finish's marker repeated the reply (the same JSON
 * form, its payloads opened, stored clear). The last test records a current-shape (4) execution live and replays it; the one before runs shapes 2 and 3 started
 * as an older api did, and replays them.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { buildOrg, recordExecutionLike } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { v1As } from '../helpers/v1';
import { replaySource, useExecutionStack } from '../helpers/worker';
import { executionWorkflowId } from '../../workflows/ids';
import { Execution, type ExecutionDoc } from '../../models';
import { temporalExtensions } from '../../lib/dataConverter';

useTestDatabase();
const stack = useExecutionStack('replay');

const eventTypes = (h: temporal.api.history.v1.IHistory): string[] =>
  (h.events ?? []).map((e) => temporal.api.enums.v1.EventType[e.eventType ?? 0]);

it('an execution recorded before the input shape and the payload codec (clear payloads) replays on the current code', async () => {
  const history = temporal.api.history.v1.History.decode(
    readFileSync(path.join(__dirname, '../fixtures/execution-history-legacy.bin'))
  );
  // The fixture is what it says: the old shape's markers are in it.
  expect(eventTypes(history).filter((t) => t === 'EVENT_TYPE_MARKER_RECORDED').length).toBe(3);
  await Worker.runReplayHistory(replaySource(stack.t.config), history);
}, 60_000);

/**
 * @param executionId an execution.
 * @returns its workflow's result.
 */
const handleResult = (executionId: string): Promise<unknown> =>
  stack.t.temporal.client.workflow.getHandle(executionWorkflowId(executionId)).result();

/**
 * @param name the fixture's file name.
 * @returns the history it holds.
 */
function jsonHistory(name: string): temporal.api.history.v1.History {
  return temporal.api.history.v1.History.fromObject(
    JSON.parse(readFileSync(path.join(__dirname, '../fixtures', name), 'utf8'))
  );
}

it.each(['completed', 'cancelled'])(
  'an execution of shape 2 (%s; the model call a regular activity) replays on the current code',
  async (outcome) => {
    const history = jsonHistory(`execution-history-shape2-${outcome}.json`);
    const types = eventTypes(history);
    // The fixture is what it says: the model call was a regular activity, and the workflow ended as recorded.
    expect(types).toContain('EVENT_TYPE_ACTIVITY_TASK_SCHEDULED');
    expect(types).toContain(
      outcome === 'cancelled' ? 'EVENT_TYPE_ACTIVITY_TASK_CANCELED' : 'EVENT_TYPE_ACTIVITY_TASK_COMPLETED'
    );
    expect(types.at(-1)).toBe('EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED');
    await Worker.runReplayHistory(replaySource(stack.t.config), history);
  },
  60_000
);

it("a completed execution of shape 3 whose finish's marker repeated the reply replays on the current code", async () => {
  const history = jsonHistory('execution-history-shape3-completed.json');
  // The fixture is what it says: two markers (the local reply and the local finish), the finish's result holding the
  // reply, as the workflow's result does.
  const markers = (history.events ?? []).filter((e) => e.markerRecordedEventAttributes);
  expect(markers).toHaveLength(2);
  const finishResult = JSON.parse(
    Buffer.from(markers[1].markerRecordedEventAttributes!.details!.result!.payloads![0].data!).toString('utf8')
  );
  expect(finishResult).toEqual({ status: 'completed', text: 'tok1 tok2 tok3 tok4 tok5 ' });
  expect(eventTypes(history).at(-1)).toBe('EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED');
  await Worker.runReplayHistory(replaySource(stack.t.config), history);
}, 60_000);

it.each([2, 3] as const)(
  'an execution started with shape %s before an upgrade runs to its end on the current code',
  async (shape) => {
    const org = await buildOrg();
    const as = v1As(stack.t, org.apiToken);
    const agent = await as.post('/agents', { name: 'Echo', systemPrompt: 'x' });
    const res = await as.post(`/agents/${agent.body.id}/execute`, { message: '[chunks:2] hi' });
    expect(res.status).toBe(200);
    // A second turn of the same conversation, recorded as an older api did, then started with shape 2.
    const first = (await Execution.findById(res.body.executionId).lean<ExecutionDoc>())!;
    const { _id: id } = await recordExecutionLike(first, { turn: first.turn + 1, message: '[chunks:3] again' });
    const handle = await stack.t.temporal.client.workflow.start('agentExecution', {
      workflowId: executionWorkflowId(id),
      taskQueue: stack.t.config.temporalTaskQueue,
      args: [{ executionId: id, deadlineSeconds: 60, shape }],
    });
    expect(await handle.result()).toMatchObject({ status: 'completed' });
    const history = await handle.fetchHistory();
    const types = eventTypes(history);
    if (shape === 2) {
      // The old shape ran: the model call a regular activity under the deadline timer.
      expect(types).toContain('EVENT_TYPE_ACTIVITY_TASK_COMPLETED');
      expect(types).toContain('EVENT_TYPE_TIMER_STARTED');
    } else {
      // Shape 3: two local activities, the reply's and the finish's markers.
      expect(types).not.toContain('EVENT_TYPE_ACTIVITY_TASK_SCHEDULED');
      expect(types.filter((t) => t === 'EVENT_TYPE_MARKER_RECORDED')).toHaveLength(2);
    }
    expect(await Execution.findById(id).lean()).toMatchObject({ status: 'completed', result: 'tok1 tok2 tok3 ' });
    await Worker.runReplayHistory(replaySource(stack.t.config), history);
  },
  60_000
);

it('a current execution (shape 4) is one local activity, with no patch markers, timers or search-attribute upserts, and replays', async () => {
  const org = await buildOrg();
  const as = v1As(stack.t, org.apiToken);
  const agent = await as.post('/agents', { name: 'Echo', systemPrompt: 'x' });
  const res = await as.post(`/agents/${agent.body.id}/execute`, { message: '[chunks:5] hi' });
  expect(res.status).toBe(200);
  // The answer comes with the outcome, before the workflow task completes: its history is read once it has.
  expect(await handleResult(res.body.executionId)).toEqual({ status: 'completed', text: 'tok1 tok2 tok3 tok4 tok5 ' });
  const history = await stack.t.temporal.client.workflow
    .getHandle(executionWorkflowId(res.body.executionId))
    .fetchHistory();
  // Its payloads are sealed: replay opens them with the workers' data converter.
  const types = eventTypes(history);
  expect(types).not.toContain('EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES');
  expect(types).not.toContain('EVENT_TYPE_ACTIVITY_TASK_SCHEDULED');
  expect(types).not.toContain('EVENT_TYPE_TIMER_STARTED');
  // One marker: the reply and its finish in one local activity (activities/executionRun.ts).
  expect(types.filter((t) => t === 'EVENT_TYPE_MARKER_RECORDED')).toHaveLength(1);
  // Its result is the finish's outcome (the status alone: the reply it recorded is the one given) and the reply once.
  const codec = temporalExtensions(stack.t.config).dataConverter.payloadCodecs![0];
  const marker = (history.events ?? []).find((e) => e.markerRecordedEventAttributes)!;
  const [opened] = await codec.decode(marker.markerRecordedEventAttributes!.details!.result!.payloads!);
  expect(JSON.parse(Buffer.from(opened.data!).toString('utf8'))).toEqual({
    finished: { status: 'completed' },
    text: 'tok1 tok2 tok3 tok4 tok5 ',
  });
  await Worker.runReplayHistory(replaySource(stack.t.config), history);
}, 60_000);
