/**
 * The steps of a recorded reply and what a rerun from each starts with (commands/executionSteps.ts): pure logic
 * over a stream's events.
 */
import type { LoggedEvent } from '../../commands/eventLog';
import { stepCuts } from '../../commands/executionSteps';

let seq = 0;
const text = (t: string): LoggedEvent => ({
  seq: ++seq,
  event: 'message',
  data: { messageType: 'stream_event', delta: { type: 'text_delta', text: t } },
});
const use = (id: string): LoggedEvent => ({
  seq: ++seq,
  event: 'message',
  data: { messageType: 'tool_use', toolUseId: id, name: `tool_${id}`, input: {} },
});
const result = (id: string): LoggedEvent => ({
  seq: ++seq,
  event: 'message',
  data: { messageType: 'tool_result', toolUseId: id, content: `r${id}`, isError: false },
});
const ids = (events: Array<{ data: Record<string, unknown> }>): string[] =>
  events.map((e) => (e.data.toolUseId as string) ?? (e.data.delta as { text: string }).text);

it('model turns and tool calls in order; each seed is what came before, a tool call keeping its round’s calls', () => {
  const meta: LoggedEvent = { seq: ++seq, event: 'meta', data: {} };
  const events = [
    meta,
    text('a'),
    use('1'),
    use('2'),
    result('1'),
    result('2'),
    text('b'),
    use('3'),
    result('3'),
    text('c'),
    { seq: ++seq, event: 'result', data: {} },
  ];
  const cuts = stepCuts(events);
  expect(cuts.map((c) => c.step)).toEqual([
    { step: 1, kind: 'model_turn', round: 1 },
    { step: 2, kind: 'tool_call', round: 1, toolUseId: '1', name: 'tool_1' },
    { step: 3, kind: 'tool_call', round: 1, toolUseId: '2', name: 'tool_2' },
    { step: 4, kind: 'model_turn', round: 2 },
    { step: 5, kind: 'tool_call', round: 2, toolUseId: '3', name: 'tool_3' },
    { step: 6, kind: 'model_turn', round: 3 },
  ]);
  expect(cuts.map((c) => ids(c.seed))).toEqual([
    [],
    ['a', '1', '2'],
    ['a', '1', '2', '1'],
    ['a', '1', '2', '1', '2'],
    ['a', '1', '2', '1', '2', 'b', '3'],
    ['a', '1', '2', '1', '2', 'b', '3', '3'],
  ]);
  // Only text, calls and results are copied, without their seqs.
  expect(cuts[5].seed.every((e) => !('seq' in e) && e.event === 'message')).toBe(true);
});

it('a reply that stopped after a round’s results still offers the next model turn; one without tools has one step', () => {
  expect(stepCuts([text('a'), use('1'), result('1')]).map((c) => c.step.kind)).toEqual([
    'model_turn',
    'tool_call',
    'model_turn',
  ]);
  expect(stepCuts([text('just text')]).map((c) => c.step)).toEqual([{ step: 1, kind: 'model_turn', round: 1 }]);
  expect(stepCuts([]).map((c) => c.step.kind)).toEqual(['model_turn']);
  // A round whose results are not all recorded (a crash): no model turn after it.
  expect(stepCuts([use('1'), use('2'), result('1')]).map((c) => c.step.kind)).toEqual([
    'model_turn',
    'tool_call',
    'tool_call',
  ]);
});
