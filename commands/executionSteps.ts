/**
 * The steps of a recorded reply, read from its execution's stream (SPEC "Agent execution stream"): each model turn
 * and each tool call it made, in order. A rerun from a step (commands/chatForks.ts) copies the stream's events before
 * that step into the new execution's stream, where the reply replays them as it replays an earlier attempt's
 * (activities/executionEvents.ts `replayToolRounds`): their tools are not called again and their model turns are not
 * billed again [docs/decisions.md "Fork and rerun"].
 */
import type { LoggedEvent } from '../models';

/**
 * @returns `tool_use`, `tool_result` or null: the kind of a tool event, in today's form (a `message` event) or
 * the form streams recorded before (its own event name), which a retry still replays.
 */
export function toolEventKind(e: Pick<LoggedEvent, 'event' | 'data'>): 'tool_use' | 'tool_result' | null {
  const kind = e.event === 'message' ? (e.data as { messageType?: string }).messageType : e.event;
  return kind === 'tool_use' || kind === 'tool_result' ? kind : null;
}

/** The v1 `message` event carrying a text delta (SPEC "Agent execution stream"). */
export function textDeltaEvent(text: string): Omit<LoggedEvent, 'seq'> {
  return { event: 'message', data: { messageType: 'stream_event', delta: { type: 'text_delta', text } } };
}

/** @returns whether the event is a text delta of the reply. */
export function isTextDelta(e: Pick<LoggedEvent, 'event' | 'data'>): boolean {
  return e.event === 'message' && (e.data as { messageType?: string }).messageType === 'stream_event';
}

/** One step of a reply: a model turn (the model's call of a round), or one tool call of a round. */
export interface ExecutionStep {
  /** 1-based, in the order the steps happened. */
  step: number;
  kind: 'model_turn' | 'tool_call';
  /** The round (model turn) it belongs to, 1-based. */
  round: number;
  /** A tool call's id and tool name. */
  toolUseId?: string;
  name?: string;
}

/** A step and the events a rerun from it starts with. */
export interface StepCut {
  step: ExecutionStep;
  seed: Omit<LoggedEvent, 'seq'>[];
}

/** Only what the reply replays is copied: text deltas, tool calls and their results. */
const replayable = (e: LoggedEvent): boolean => isTextDelta(e) || toolEventKind(e) !== null;
const strip = (e: LoggedEvent): Omit<LoggedEvent, 'seq'> => ({ event: e.event, data: e.data });

/**
 * The steps of a recorded reply and, for each, the events a rerun from it starts with: for a model turn, every
 * earlier round whole; for a tool call, the earlier rounds, its round's text and calls, and the results of the calls
 * recorded before it (that call and the later ones run again). A model turn that would follow the last round's
 * results is a step too, even when the reply stopped before it.
 * @param events the execution's stream, in seq order.
 * @returns the steps in order, each with its seed.
 */
export function stepCuts(events: LoggedEvent[]): StepCut[] {
  const list = events.filter(replayable);
  const cuts: StepCut[] = [];
  let round = 0;
  let calls: { id: string; name: string; at: number }[] = [];
  const results = new Map<string, number>();
  const resolved = (): boolean => calls.length > 0 && calls.every((c) => results.has(c.id));
  const openTurn = (at: number): void => {
    round += 1;
    calls = [];
    results.clear();
    cuts.push({
      step: { step: cuts.length + 1, kind: 'model_turn', round },
      seed: list.slice(0, at).map(strip),
    });
  };
  openTurn(0);
  for (let i = 0; i < list.length; i++) {
    const e = list[i];
    const kind = toolEventKind(e);
    if (kind === 'tool_result') {
      results.set((e.data as { toolUseId: string }).toolUseId, i);
      continue;
    }
    if (resolved()) openTurn(i);
    if (kind === 'tool_use') {
      const d = e.data as { toolUseId: string; name: string };
      calls.push({ id: d.toolUseId, name: d.name, at: i });
    }
  }
  if (resolved()) openTurn(list.length);
  return withToolCalls(cuts, list);
}

/**
 * Inserts each round's tool-call steps after its model turn: the round's text and calls, then the results of the
 * calls before the one rerun.
 */
function withToolCalls(turns: StepCut[], list: LoggedEvent[]): StepCut[] {
  const out: StepCut[] = [];
  const starts = turns.map((t) => t.seed.length);
  turns.forEach((turn, r) => {
    out.push(turn);
    const end = r + 1 < starts.length ? starts[r + 1] : list.length;
    const round = list.slice(starts[r], end);
    const uses = round.filter((e) => toolEventKind(e) === 'tool_use');
    if (uses.length === 0) return;
    const lastUse = round.lastIndexOf(uses.at(-1)!);
    const head = [...list.slice(0, starts[r]), ...round.slice(0, lastUse + 1)].map(strip);
    const resultOf = new Map(
      round
        .filter((e) => toolEventKind(e) === 'tool_result')
        .map((e) => [(e.data as { toolUseId: string }).toolUseId, e])
    );
    uses.forEach((use, j) => {
      const d = use.data as { toolUseId: string; name: string };
      const before = uses
        .slice(0, j)
        .map((u) => resultOf.get((u.data as { toolUseId: string }).toolUseId))
        .filter((e): e is LoggedEvent => e !== undefined)
        .map(strip);
      out.push({
        step: { step: 0, kind: 'tool_call', round: turn.step.round, toolUseId: d.toolUseId, name: d.name },
        seed: [...head, ...before],
      });
    });
  });
  return out.map((c, i) => ({ ...c, step: { ...c.step, step: i + 1 } }));
}
