/**
 * The MCP transport's EventStore over the durable event log (commands/eventLog.ts): every message the server sends on
 * a POST's event stream is appended to `mcp:<sessionId>:<streamId>` with a gap-free seq before it is written to the
 * client, under the SSE id `<streamId>.<seq>`. A client whose stream broke resumes with `GET /mcp` and
 * `Last-Event-ID` on any api instance (api/mcp/transport.ts replays the log, then follows it live until the
 * response), so no message is lost or repeated. One EventStore per request; each stream has one writer (this
 * request), so seqs are assigned here, in order.
 */
import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { appendEvents, EXPIRED_EVENT, readEvents, type LoggedEvent } from '../../commands/eventLog';
import { mcpStreamId } from '../../models';

/** The SSE event name of every MCP message. */
export const MCP_EVENT = 'message';

const EVENT_ID = /^([A-Za-z0-9_-]{1,64})\.(\d{1,12})$/;

/**
 * @param eventId an SSE id this endpoint wrote.
 * @returns the transport stream and the seq, or null when it is not one.
 */
export function parseMcpEventId(eventId: string): { streamId: string; seq: number } | null {
  const m = EVENT_ID.exec(eventId);
  return m ? { streamId: m[1], seq: Number(m[2]) } : null;
}

/**
 * @param streamId the transport stream.
 * @param seq the event's seq.
 * @returns the SSE id.
 */
export const mcpEventId = (streamId: string, seq: number): string => `${streamId}.${seq}`;

/**
 * @param e a logged MCP event.
 * @returns whether it is a JSON-RPC response (the last message of a POST's stream).
 */
export function isJsonRpcResponse(e: LoggedEvent): boolean {
  return 'id' in e.data && ('result' in e.data || 'error' in e.data);
}

export class McpEventStore implements EventStore {
  private readonly streams = new Map<string, { seq: number; chain: Promise<unknown> }>();

  constructor(private readonly sessionId: string) {}

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    let stream = this.streams.get(streamId);
    if (!stream) {
      stream = { seq: 0, chain: Promise.resolve() };
      this.streams.set(streamId, stream);
    }
    const seq = ++stream.seq;
    const event = { seq, event: MCP_EVENT, data: message as unknown as Record<string, unknown> };
    const write = stream.chain.then(() => appendEvents(mcpStreamId(this.sessionId, streamId), [event]));
    stream.chain = write.catch(() => undefined);
    await write;
    return mcpEventId(streamId, seq);
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return parseMcpEventId(eventId)?.streamId;
  }

  async replayEventsAfter(
    lastEventId: string,
    { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> }
  ): Promise<string> {
    const position = parseMcpEventId(lastEventId);
    if (!position) throw new Error('Invalid event ID format');
    for (const e of await readEvents(mcpStreamId(this.sessionId, position.streamId), position.seq)) {
      // Priming events (empty) and `expired` events (messages past their retention) carry no JSON-RPC message.
      if (Object.keys(e.data).length > 0 && e.event !== EXPIRED_EVENT)
        await send(mcpEventId(position.streamId, e.seq), e.data as JSONRPCMessage);
    }
    return position.streamId;
  }
}
