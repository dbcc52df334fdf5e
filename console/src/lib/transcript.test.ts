/** The chat transcript's merge of history and stream (lib/transcript.ts): no gap, no repeat, steps in order. */
import { applyEvent, fromHistory, replyText, type ChatEvent, type Transcript } from './transcript';

const created = (id: number, exec: string, content: string, position = 0): ChatEvent => ({
  id,
  event: 'message.created',
  data: { execution_id: exec, message: { id: `${exec}:user`, role: 'user', content, position } },
});
const delta = (id: number, exec: string, text: string): ChatEvent => ({
  id,
  event: 'message.delta',
  data: { execution_id: exec, message_id: `${exec}:assistant`, text },
});
const completed = (id: number, exec: string, content: string): ChatEvent => ({
  id,
  event: 'message.completed',
  data: { execution_id: exec, message: { id: `${exec}:assistant`, role: 'assistant', content } },
});
const status = (id: number, exec: string, s: string, error: unknown = null): ChatEvent => ({
  id,
  event: 'chat.status',
  data: { execution_id: exec, status: s, error },
});
const apply = (t: Transcript, events: ChatEvent[]): Transcript => events.reduce(applyEvent, t);

it('builds a streamed reply from its deltas, once each even when events come again', () => {
  const events = [created(1, 'e1', 'hi'), status(2, 'e1', 'working'), delta(3, 'e1', 'Hel'), delta(4, 'e1', 'lo')];
  let t = apply(fromHistory([]), events);
  t = apply(t, events); // a reconnection that repeated them
  expect(t.turns).toHaveLength(1);
  expect(t.turns[0].user).toBe('hi');
  expect(replyText(t.turns[0])).toBe('Hello');
  expect(t.turns[0].finished).toBe(false);
  expect(t.status).toBe('working');
  t = apply(t, [completed(5, 'e1', 'Hello'), status(6, 'e1', 'done')]);
  expect(replyText(t.turns[0])).toBe('Hello');
  expect(t.turns[0].finished).toBe(true);
  expect(t.status).toBe('done');
});

it('keeps a finished turn of the history when the replay starts inside it', () => {
  const history = fromHistory([
    { id: 'e1:user', role: 'user', content: 'q', position: 0, execution_id: 'e1' },
    { id: 'e1:assistant', role: 'assistant', content: 'Full answer', position: 1, execution_id: 'e1' },
  ]);
  const t = apply(history, [delta(7, 'e1', 'answer'), completed(8, 'e1', 'Full answer'), status(9, 'e1', 'done')]);
  expect(t.needsFullReplay).toBe(false);
  expect(t.turns).toHaveLength(1);
  expect(replyText(t.turns[0])).toBe('Full answer');
});

it('asks for the stream from its start when a running reply’s beginning was not replayed', () => {
  const history = fromHistory([{ id: 'e1:user', role: 'user', content: 'q', position: 0, execution_id: 'e1' }]);
  const t = apply(history, [delta(40, 'e1', 'middle')]);
  expect(t.needsFullReplay).toBe(true);
  expect(replyText(t.turns[0])).toBe('');
  // Replayed from the start, the same history gets the whole reply.
  const full = apply(history, [created(1, 'e1', 'q'), delta(2, 'e1', 'begin '), delta(40, 'e1', 'middle')]);
  expect(full.needsFullReplay).toBe(false);
  expect(replyText(full.turns[0])).toBe('begin middle');
});

it('shows tool calls, MCP calls and sub-agent runs as steps between the texts, in order', () => {
  const t = apply(fromHistory([]), [
    created(1, 'e1', 'go'),
    delta(2, 'e1', 'Using tools.'),
    completed(3, 'e1', 'Using tools.'),
    {
      id: 4,
      event: 'tool.call',
      data: {
        execution_id: 'e1',
        tool_use_id: 't1',
        name: 'docs__search',
        input: { q: 1 },
        mcp: { server: 'docs', tool: 'search' },
      },
    },
    { id: 5, event: 'tool.result', data: { execution_id: 'e1', tool_use_id: 't1', content: 'found', is_error: false } },
    {
      id: 6,
      event: 'subagent.started',
      data: { execution_id: 'e1', tool_use_id: 't2', subagent_execution_id: 'e2', agent_id: 'agt_x' },
    },
    {
      id: 7,
      event: 'subagent.finished',
      data: {
        execution_id: 'e1',
        tool_use_id: 't2',
        subagent_execution_id: 'e2',
        agent_id: 'agt_x',
        status: 'completed',
      },
    },
    delta(8, 'e1', 'Tool results'),
    status(9, 'e1', 'error', { message: 'boom' }),
  ]);
  const segments = t.turns[0].segments;
  expect(segments.map((s) => s.kind)).toEqual(['text', 'tool', 'subagent', 'text']);
  expect(segments[1]).toMatchObject({
    mcp: { server: 'docs', tool: 'search' },
    result: { content: 'found', isError: false },
  });
  expect(segments[2]).toMatchObject({ agentId: 'agt_x', status: 'completed' });
  expect(replyText(t.turns[0])).toBe('Using tools.\n\nTool results');
  expect(t.turns[0]).toMatchObject({ finished: true, error: 'boom' });
});

it('orders turns by position and puts a new one after the history', () => {
  const history = fromHistory([
    { id: 'e2:user', role: 'user', content: 'second', position: 2, execution_id: 'e2' },
    { id: 'e1:user', role: 'user', content: 'first', position: 0, execution_id: 'e1' },
    { id: 'e1:assistant', role: 'assistant', content: 'a1', position: 1, execution_id: 'e1' },
    { id: 'e2:assistant', role: 'assistant', content: 'a2', position: 3, execution_id: 'e2' },
  ]);
  const t = apply(history, [created(20, 'e3', 'third', 4)]);
  expect(t.turns.map((x) => x.user)).toEqual(['first', 'second', 'third']);
});
