/** McpServer → public JSON (v1): never the headers' values, only their names. */
import type { McpServerDoc } from '../models';

/**
 * @param doc the stored server.
 * @returns the public record.
 */
export function presentMcpServer(doc: McpServerDoc): Record<string, unknown> {
  return {
    id: doc._id,
    name: doc.name,
    description: doc.description ?? '',
    url: doc.url,
    headerNames: doc.headerNames ?? [],
    allowedTools: doc.allowedTools ?? null,
    organizationId: doc.organizationId,
    createdBy: doc.createdBy,
    createdAt: doc.createdAt.toISOString(),
    updatedAt: doc.updatedAt.toISOString(),
  };
}
