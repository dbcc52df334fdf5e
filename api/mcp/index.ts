/**
 * `/mcp`: the MCP streamable HTTP endpoint [docs/decisions.md "MCP and OAuth"], any api instance serving any
 * session:
 * - POST: the official SDK's StreamableHTTPServerTransport answers the message(s), with a Server made for this
 *   request (stateless transport: the session is ours). An initialize request opens a session (`mcp_sessions`, its
 *   id in `Mcp-Session-Id`); every other request must name a session of the caller's organization and user, with
 *   the negotiated `MCP-Protocol-Version` (or none). What the server sends on a POST's event stream goes through
 *   the EventStore into the durable event log first (api/mcp/eventStore.ts).
 * - GET: with `Last-Event-ID`, replays that stream from the event log and follows it live until its response (on
 *   any instance: the work may run on another one); without, the session's standalone stream (heartbeats).
 * - DELETE: closes the session (its later requests: 404).
 * Authentication (OAuth access token or service token, scope `mcp`) is api/mcp/auth.ts; the tools are
 * api/mcp/tools.ts.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  isInitializeRequest,
  LATEST_PROTOCOL_VERSION,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  McpError,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';
import { MCP_PATH } from '../../commands/oauth';
import type { Schema } from '../../lib/ajv';
import { NotFoundError } from '../../lib/errors';
import { buildInfo } from '../../lib/version';
import { EXPIRED_EVENT } from '../../commands/eventLog';
import { McpSession, mcpStreamId, type McpSessionDoc } from '../../models';
import type { AppContext } from '../context';
import type { RouteSpec } from '../route';
import { streamEvents, streamFullyRead } from '../sse';
import type { ExecutionRouteDeps } from '../deps';
import { oauthRoutes } from '../oauth';
import { appStreamRoutes } from './appStreams';
import { isJsonRpcResponse, McpEventStore, mcpEventId, parseMcpEventId } from './eventStore';
import { JOB_TRANSCRIPT_TEMPLATE, listTranscriptResources, readTranscriptResource } from './jobTools';
import type { ToolContext } from './tool';
import { callTool, mcpTools } from './tools';

const tags = ['MCP'];
const TOOLS = mcpTools();
const TOOLS_BY_NAME = new Map(TOOLS.map((t) => [t.name, t]));
/** The transport's id of a session's standalone (GET) stream. */
const STANDALONE_STREAM = '_GET_stream';

/** A JSON-RPC error answered before the transport (the body the MCP transport specification fixes). */
function rpcError(ctx: AppContext, status: number, code: number, message: string): void {
  ctx.status = status;
  ctx.body = { jsonrpc: '2.0', error: { code, message }, id: null };
}

/**
 * The session a request names, if it belongs to the caller and is open; answers the error itself otherwise.
 * @returns the session, or null when the request was answered.
 */
async function requestSession(ctx: AppContext): Promise<McpSessionDoc | null> {
  const id = ctx.get('mcp-session-id');
  if (id === '') {
    rpcError(ctx, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
    return null;
  }
  const session =
    id.length <= 100
      ? await McpSession.findOne({ _id: id, organizationId: ctx.state.auth.organizationId }).lean<McpSessionDoc>()
      : null;
  if (!session || session.closedAt || session.userId !== ctx.state.auth.userId) {
    rpcError(ctx, 404, -32001, 'Session not found');
    return null;
  }
  const version = ctx.get('mcp-protocol-version');
  if (version !== '' && version !== session.protocolVersion) {
    rpcError(
      ctx,
      400,
      -32000,
      `Bad Request: MCP-Protocol-Version ${version} is not this session's (${session.protocolVersion})`
    );
    return null;
  }
  return session;
}

/**
 * The MCP server for one request: the tools, bound to the caller, the session and the request id.
 * @returns the server (connected by the caller to this request's transport).
 */
function requestServer(deps: ExecutionRouteDeps, ctx: AppContext, sessionId: string): Server {
  const server = new Server(
    { name: buildInfo(deps.config.gitCommit).name, version: buildInfo(deps.config.gitCommit).version },
    {
      capabilities: { tools: {}, resources: {} },
      instructions:
        'Agents, chats, jobs and tasks of your organization; job transcripts are resources (job://{job_id}/transcript). Tools answer the same JSON as the /api routes of the same ' +
        'names (see the OpenAPI document at /api/openapi.json).',
    }
  );
  const auth = ctx.state.auth;
  const log = ctx.state.log.child({ mcpSession: sessionId, mcpClient: ctx.state.mcpClientId });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: TOOLS.map((t) => ({
      name: t.name,
      title: t.title,
      description: t.description,
      inputSchema: t.inputSchema as { type: 'object' },
      ...(t.annotations ? { annotations: t.annotations } : {}),
    })),
  }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [
      {
        uriTemplate: JOB_TRANSCRIPT_TEMPLATE,
        name: 'Job transcript',
        description:
          'The transcript events of every iteration of a job, in order (as GET /api/jobs/{id}/transcript-events)',
        mimeType: 'application/json',
      },
    ],
  }));
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: await listTranscriptResources(auth),
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    try {
      const contents = await readTranscriptResource(auth, request.params.uri);
      log.info({ resource: request.params.uri }, 'mcp resource read');
      return { contents };
    } catch (err) {
      if (err instanceof NotFoundError) throw new McpError(-32002, `Resource not found: ${request.params.uri}`);
      throw err;
    }
  });
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = TOOLS_BY_NAME.get(request.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    const progressToken = request.params._meta?.progressToken;
    const toolCtx: ToolContext = {
      deps,
      auth,
      log,
      signal: extra.signal,
      progress: async (progress, message) => {
        if (progressToken === undefined) return;
        await extra
          .sendNotification({ method: 'notifications/progress', params: { progressToken, progress, message } })
          .catch((err: unknown) => log.debug({ err }, 'progress notification not sent'));
      },
    };
    return callTool(tool, request.params.arguments, toolCtx);
  });
  return server;
}

/** POST /mcp: the SDK transport answers, after the session is opened or checked. */
async function post(deps: ExecutionRouteDeps, ctx: AppContext): Promise<void> {
  const body = (ctx.request as { body?: unknown }).body;
  let sessionId: string;
  if (isInitializeRequest(body)) {
    const requested = body.params.protocolVersion;
    const session = await McpSession.create({
      organizationId: ctx.state.auth.organizationId,
      userId: ctx.state.auth.userId,
      clientId: ctx.state.mcpClientId ?? ctx.state.auth.tokenId,
      protocolVersion: SUPPORTED_PROTOCOL_VERSIONS.includes(requested) ? requested : LATEST_PROTOCOL_VERSION,
      clientName: String(body.params.clientInfo?.name ?? '').slice(0, 200),
    });
    sessionId = session._id;
    ctx.state.log.info({ mcpSession: sessionId, mcpClient: ctx.state.mcpClientId }, 'mcp session opened');
  } else {
    const session = await requestSession(ctx);
    if (!session) return;
    sessionId = session._id;
  }
  const server = requestServer(deps, ctx, sessionId);
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    eventStore: new McpEventStore(sessionId),
    retryInterval: 2000,
  });
  transport.onerror = (err) => ctx.state.log.debug({ err }, 'mcp transport');
  // Never closed on a client disconnect: that would abort the calls in flight, whose messages still go to the
  // event log for a resuming client. Once its responses are sent, the pair holds no timer and is collected.
  await server.connect(transport);
  ctx.set('Mcp-Session-Id', sessionId);
  ctx.respond = false; // the transport writes the response
  await transport.handleRequest(ctx.req, ctx.res, body);
}

/** GET /mcp: resume a POST's stream (`Last-Event-ID`), or the session's standalone stream. */
async function get(deps: ExecutionRouteDeps, ctx: AppContext): Promise<void> {
  if (!ctx.get('accept').includes('text/event-stream'))
    return rpcError(ctx, 406, -32000, 'Not Acceptable: Client must accept text/event-stream');
  const session = await requestSession(ctx);
  if (!session) return;
  const last = ctx.get('last-event-id');
  const position = last === '' ? { streamId: STANDALONE_STREAM, seq: -1 } : parseMcpEventId(last);
  if (!position) return rpcError(ctx, 400, -32000, 'Invalid Last-Event-ID');
  const streamId = mcpStreamId(session._id, position.streamId);
  ctx.set('Mcp-Session-Id', session._id);
  await streamEvents(ctx, {
    streamId,
    // The standalone stream starts now; a resumed one right after the client's last event.
    afterSeq: position.seq >= 0 ? position.seq : 0,
    tailer: deps.events,
    shutdown: deps.shutdown,
    isTerminal: position.streamId === STANDALONE_STREAM ? () => false : isJsonRpcResponse,
    heartbeatMs: deps.config.sseHeartbeatMs,
    // A session closed (DELETE, on any instance) ends its open streams at the next heartbeat.
    isGone: async () =>
      (await McpSession.findOne({ _id: session._id, organizationId: session.organizationId }).lean<McpSessionDoc>())
        ?.closedAt != null,
    // Priming events (empty) only mark a position; so does an `expired` event (JSON-RPC has no message for it).
    format: (e) =>
      Object.keys(e.data).length === 0 || e.event === EXPIRED_EVENT
        ? null
        : `event: message\nid: ${mcpEventId(position.streamId, e.seq)}\ndata: ${JSON.stringify(e.data)}\n\n`,
  });
}

/** DELETE /mcp: closes the session. */
async function del(ctx: AppContext): Promise<void> {
  const session = await requestSession(ctx);
  if (!session) return;
  await McpSession.updateOne(
    { _id: session._id, organizationId: session.organizationId },
    { $set: { closedAt: new Date() } }
  );
  ctx.state.log.info({ mcpSession: session._id }, 'mcp session closed');
  ctx.status = 204;
}

const jsonRpc: Schema = {
  anyOf: [{ type: 'object' }, { type: 'array', maxItems: 100 }],
  description: 'A JSON-RPC 2.0 message (request, notification or response) or a batch of them',
};

/**
 * @param deps app dependencies.
 * @returns the `/mcp` route declarations.
 */
export function mcpRoutes(deps: ExecutionRouteDeps): RouteSpec[] {
  const common = { tags, auth: 'mcp' as const, scope: 'mcp' as const };
  return [
    {
      ...common,
      method: 'post',
      path: MCP_PATH,
      summary: 'MCP streamable HTTP: send JSON-RPC messages (an initialize request opens a session)',
      body: jsonRpc,
      responses: {
        200: { sse: true, description: 'The answers as an event stream (`event: message`, ids `<stream>.<seq>`)' },
        202: { contentType: 'text/plain', description: 'Notifications or responses accepted' },
      },
      errors: [404, 406],
      handler: (ctx) => post(deps, ctx),
    },
    {
      ...common,
      method: 'get',
      path: MCP_PATH,
      summary: 'MCP streamable HTTP: the session’s stream, or a POST’s stream resumed after Last-Event-ID',
      responses: { 200: { sse: true, description: 'Server messages (`event: message`)' }, 204: streamFullyRead },
      errors: [400, 404, 406],
      handler: (ctx) => get(deps, ctx),
    },
    {
      ...common,
      method: 'delete',
      path: MCP_PATH,
      summary: 'MCP streamable HTTP: close the session',
      responses: { 204: { contentType: 'text/plain', description: 'Closed' } },
      errors: [400, 404],
      handler: del,
    },
  ];
}

/**
 * The routes mounted at the root beside the contract's well-known documents: the authorization server, the MCP
 * endpoint and the signed app streams (the README's MCP table is generated from them).
 * @param deps app dependencies.
 * @returns the route declarations.
 */
export function mcpSurfaceRoutes(deps: ExecutionRouteDeps): RouteSpec[] {
  return [...oauthRoutes(deps.config), ...mcpRoutes(deps), ...appStreamRoutes(deps)];
}
