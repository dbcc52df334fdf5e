/**
 * MCP server instances [docs/decisions.md "MCP server instances"]: remote MCP servers an organization registers
 * (models/McpServer.ts) and its agents call tools of, through `mcpServerIds` on the agent and their skills'
 * `requiredMCPs` (names). Every member reads them; the creator and the owners/admins change or delete one. The URL
 * passes the webhook destination check when stored and again at every connection (lib/mcpClient.ts); the headers
 * are sealed at rest and never returned (their names are).
 */
import type { AuthContext } from './tokens';
import { agentsChanged } from './agents';
import type { Config } from '../lib/config';
import { decryptSecret, encryptSecret } from '../lib/crypto';
import {
  ConflictError,
  EncryptionUnavailableError,
  ForbiddenError,
  NotFoundError,
  ValidationError,
} from '../lib/errors';
import {
  listTools,
  type McpClientOptions,
  type McpEndpoint,
  type McpFailure,
  type McpToolInfo,
} from '../lib/mcpClient';
import { insertDocument, isDuplicateKey } from '../lib/mongo';
import { paginate } from '../lib/pagination';
import { assertSafeUrl, UnsafeDestinationError } from '../lib/safeDestination';
import { Agent, McpServer, type McpServerDoc } from '../models';

const NOT_FOUND = 'MCP server not found';

/** What a client sets. */
export interface McpServerInput {
  name: string;
  description?: string;
  url: string;
  /** Replaces every header; null or `{}` removes them. */
  headers?: Record<string, string> | null;
  /** null: every tool of the server. */
  allowedTools?: string[] | null;
}

/**
 * Headers the transport sets itself: a client may not set them (the request would break, or lie about its body).
 */
export const RESERVED_HEADERS = [
  'host',
  'content-length',
  'content-type',
  'accept',
  'connection',
  'transfer-encoding',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
];

/** The client options every MCP exchange of the service uses (lib/config.ts `agentTools`). */
export function mcpClientOptions(config: Pick<Config, 'webhookAllowPrivate' | 'agentTools'>): McpClientOptions {
  return {
    allowPrivate: config.webhookAllowPrivate,
    timeoutMs: config.agentTools.mcpTimeoutMs,
    maxResponseBytes: config.agentTools.mcpResponseMaxBytes,
    caFile: config.agentTools.mcpCaFile,
  };
}

function checkUrl(url: string, config: Pick<Config, 'webhookAllowPrivate'>): void {
  try {
    assertSafeUrl(url, { allowPrivate: config.webhookAllowPrivate });
  } catch (err) {
    if (err instanceof UnsafeDestinationError) throw new ValidationError(`Invalid url: ${err.message}`);
    throw err;
  }
}

/** @returns the sealed headers and their names (nothing sealed without headers). */
function sealHeaders(
  headers: Record<string, string> | null | undefined,
  config: Pick<Config, 'encryptionKey'>
): { sealedHeaders: string | null; headerNames: string[] } {
  const names = Object.keys(headers ?? {});
  if (names.length === 0) return { sealedHeaders: null, headerNames: [] };
  const reserved = names.find((n) => RESERVED_HEADERS.includes(n.toLowerCase()));
  if (reserved !== undefined) throw new ValidationError(`Invalid headers: ${reserved} is set by the service`);
  const lower = new Set(names.map((n) => n.toLowerCase()));
  if (lower.size !== names.length) throw new ValidationError('Invalid headers: a header is named twice');
  if (!config.encryptionKey) throw new EncryptionUnavailableError();
  return { sealedHeaders: encryptSecret(config.encryptionKey, JSON.stringify(headers)), headerNames: names };
}

const taken = (name: string): ConflictError =>
  new ConflictError(`An MCP server named ${name} already exists in the organization`);

/**
 * Registers an MCP server.
 * @param auth the caller.
 * @param config destination rules and the encryption key.
 * @param input validated fields.
 * @returns the record.
 * @throws ValidationError for a refused URL or header; ConflictError for a taken name.
 */
export async function createMcpServer(
  auth: AuthContext,
  config: Pick<Config, 'webhookAllowPrivate' | 'encryptionKey'>,
  input: McpServerInput
): Promise<McpServerDoc> {
  checkUrl(input.url, config);
  try {
    return (await insertDocument(McpServer, {
      organizationId: auth.organizationId,
      name: input.name,
      description: input.description ?? '',
      url: input.url,
      ...sealHeaders(input.headers, config),
      allowedTools: input.allowedTools ?? null,
      createdBy: auth.userId,
    })) as McpServerDoc;
  } catch (err) {
    if (isDuplicateKey(err)) throw taken(input.name);
    throw err;
  }
}

/**
 * @param auth the caller.
 * @param page limit and cursor.
 * @returns one page of the organization's MCP servers, newest first.
 */
export async function listMcpServers(
  auth: AuthContext,
  page: { limit: number; cursor?: string }
): Promise<{ items: McpServerDoc[]; nextCursor: string | null }> {
  return paginate<McpServerDoc>(McpServer, { organizationId: auth.organizationId }, page);
}

/**
 * @param auth the caller.
 * @param id an MCP server id.
 * @returns the organization's server.
 * @throws NotFoundError for another organization's or an unknown one.
 */
export async function findMcpServer(auth: AuthContext, id: string): Promise<McpServerDoc> {
  const doc = await McpServer.findOne({ _id: id, organizationId: auth.organizationId }).lean<McpServerDoc>();
  if (!doc) throw new NotFoundError(NOT_FOUND);
  return doc;
}

async function findModifiable(auth: AuthContext, id: string): Promise<McpServerDoc> {
  const doc = await findMcpServer(auth, id);
  if (doc.createdBy !== auth.userId && auth.role === 'member') throw new ForbiddenError();
  return doc;
}

/**
 * Updates an MCP server; omitted fields stay unchanged, `headers` replaces them all.
 * @param auth the caller (its creator or an owner/admin).
 * @param config destination rules and the encryption key.
 * @param id the server.
 * @param changes validated fields.
 * @returns the record after the update.
 */
export async function updateMcpServer(
  auth: AuthContext,
  config: Pick<Config, 'webhookAllowPrivate' | 'encryptionKey'>,
  id: string,
  changes: Partial<McpServerInput>
): Promise<McpServerDoc> {
  const doc = await findModifiable(auth, id);
  if (changes.url !== undefined) checkUrl(changes.url, config);
  const set: Record<string, unknown> = {};
  if (changes.name !== undefined) set.name = changes.name;
  if (changes.description !== undefined) set.description = changes.description;
  if (changes.url !== undefined) set.url = changes.url;
  if (changes.headers !== undefined) Object.assign(set, sealHeaders(changes.headers, config));
  if (changes.allowedTools !== undefined) set.allowedTools = changes.allowedTools;
  if (Object.keys(set).length === 0) return doc;
  try {
    const updated = await McpServer.findOneAndUpdate(
      { _id: doc._id, organizationId: auth.organizationId },
      { $set: set },
      { new: true }
    ).lean<McpServerDoc>();
    if (!updated) throw new NotFoundError(NOT_FOUND);
    return updated;
  } catch (err) {
    if (isDuplicateKey(err)) throw taken(changes.name ?? doc.name);
    throw err;
  }
}

/**
 * Deletes an MCP server and takes it out of the organization's agents (their executions no longer get its tools).
 * @param auth the caller (its creator or an owner/admin).
 * @param id the server.
 */
export async function deleteMcpServer(auth: AuthContext, id: string): Promise<void> {
  const doc = await findModifiable(auth, id);
  await McpServer.deleteOne({ _id: doc._id, organizationId: auth.organizationId });
  await Agent.updateMany(
    { organizationId: auth.organizationId, mcpServerIds: doc._id },
    { $pull: { mcpServerIds: doc._id } }
  );
  await agentsChanged(auth.organizationId);
}

/**
 * Checks the MCP server ids an agent is given (create and update, both surfaces), before anything is stored.
 * @param auth the caller.
 * @param ids the ids as sent (schema-checked: capped, no repeats).
 * @param field the field's name in the request (`mcpServerIds`, `mcp_server_ids`).
 * @throws ValidationError naming the field for an id that is not an MCP server of the caller's organization.
 */
export async function checkMcpServerIds(auth: AuthContext, ids: readonly string[], field: string): Promise<void> {
  if (ids.length === 0) return;
  // By `_id`, each (docs/query-shapes.md); the organization is checked on the rows.
  const found = await McpServer.find({ $or: ids.map((_id) => ({ _id })) })
    .select({ _id: 1, organizationId: 1 })
    .lean();
  const known = new Set(found.filter((d) => d.organizationId === auth.organizationId).map((d) => d._id));
  const bad = ids.find((id) => !known.has(id));
  if (bad !== undefined) throw new ValidationError(`Invalid ${field}: MCP server ${bad} not found`);
}

/**
 * The servers one execution's agent may use: those of its `mcpServerIds`, then those its skills require by name
 * (`requiredMCPs`), each once, all of the agent's organization; an id or name that matches none is left out.
 * @param agent the agent (its organization and `mcpServerIds`).
 * @param skills its skills (their `requiredMCPs`).
 * @returns the servers, in that order.
 */
export async function mcpServersForAgent(
  agent: { organizationId: string; mcpServerIds?: readonly string[] | null },
  skills: ReadonlyArray<{ requiredMCPs?: readonly string[] | null }>
): Promise<McpServerDoc[]> {
  const ids = [...new Set(agent.mcpServerIds ?? [])];
  const names = [...new Set(skills.flatMap((s) => s.requiredMCPs ?? []))];
  if (ids.length === 0 && names.length === 0) return [];
  // Each branch is index-served: `_id`, or (organizationId, name); the organization is checked on the rows.
  const or = [...ids.map((_id) => ({ _id })), ...names.map((name) => ({ organizationId: agent.organizationId, name }))];
  const found = (await McpServer.find({ $or: or }).lean<McpServerDoc[]>()).filter(
    (d) => d.organizationId === agent.organizationId
  );
  const byId = new Map(found.map((d) => [d._id, d]));
  const byName = new Map(found.map((d) => [d.name, d]));
  const out = new Map<string, McpServerDoc>();
  for (const id of ids) if (byId.has(id)) out.set(id, byId.get(id)!);
  for (const name of names) {
    const d = byName.get(name);
    if (d && !out.has(d._id)) out.set(d._id, d);
  }
  return [...out.values()];
}

/**
 * @param config the encryption key.
 * @param doc a server.
 * @returns where it is and its headers in clear (for the client only; never shown).
 * @throws EncryptionUnavailableError when headers are sealed and no key is configured.
 */
export function endpointOf(config: Pick<Config, 'encryptionKey'>, doc: McpServerDoc): McpEndpoint {
  if (!doc.sealedHeaders) return { url: doc.url, headers: {} };
  if (!config.encryptionKey) throw new EncryptionUnavailableError();
  return { url: doc.url, headers: JSON.parse(decryptSecret(config.encryptionKey, doc.sealedHeaders)) };
}

/** A server's reachability and tools, as GET /api/v1/mcp-servers/{id}/tools answers. */
export type McpServerTools = { ok: true; tools: McpToolInfo[] } | McpFailure;

/**
 * Lists a server's tools through the MCP client (never throws for the server's failures: they are the answer).
 * @param config destination rules, limits and the key.
 * @param doc the server.
 * @returns its tools, or why it could not be reached.
 */
export async function mcpServerTools(
  config: Pick<Config, 'webhookAllowPrivate' | 'agentTools' | 'encryptionKey'>,
  doc: McpServerDoc
): Promise<McpServerTools> {
  return listTools(endpointOf(config, doc), mcpClientOptions(config));
}
