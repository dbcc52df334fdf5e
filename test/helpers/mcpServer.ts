/**
 * A real MCP server on loopback for the tests: the official SDK's McpServer behind its StreamableHTTPServerTransport
 * (stateless, JSON answers), over HTTPS with a certificate made on the spot (the service trusts it through
 * MCP_CA_FILE). Two tools, `add {a, b, delayMs?}` (answers after delayMs) and `shout {text}`; every call is kept with the Authorization header it came
 * with, so a test sees what reached the server.
 */
import { mkdtempSync } from 'node:fs';
import https from 'node:https';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { loopbackCertificate } from '../../scripts/fakes/certificate';
import { useExecutionStack, type ExecutionStack } from './worker';

export interface McpCall {
  tool: string;
  args: Record<string, unknown>;
  authorization: string | undefined;
}

export interface McpTestServer {
  /** The streamable-HTTP endpoint (`https://127.0.0.1:<port>/mcp`). */
  url: string;
  /** The certificate's PEM file (MCP_CA_FILE, NODE_EXTRA_CA_CERTS). */
  certFile: string;
  /** Every tool call received, in order. */
  calls: McpCall[];
  close(): Promise<void>;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? undefined : JSON.parse(text);
}

/** @returns the server, listening on a free loopback port. */
export async function startMcpTestServer(): Promise<McpTestServer> {
  const certificate = loopbackCertificate(mkdtempSync(path.join(os.tmpdir(), 'mcp-test-')));
  const calls: McpCall[] = [];
  const server = https.createServer({ key: certificate.key, cert: certificate.cert }, (req, res) => {
    void (async () => {
      if (!req.url?.startsWith('/mcp')) {
        res.writeHead(404).end();
        return;
      }
      if (req.method !== 'POST') {
        res.writeHead(405, { allow: 'POST' }).end();
        return;
      }
      const authorization = req.headers.authorization;
      const mcp = new McpServer({ name: 'test-tools', version: '1.0.0' });
      mcp.registerTool(
        'add',
        {
          description: 'Adds two numbers',
          inputSchema: { a: z.number(), b: z.number(), delayMs: z.number().optional() },
        },
        async ({ a, b, delayMs }) => {
          calls.push({ tool: 'add', args: { a, b, ...(delayMs !== undefined ? { delayMs } : {}) }, authorization });
          if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
          return { content: [{ type: 'text', text: `sum=${a + b}` }] };
        }
      );
      mcp.registerTool(
        'shout',
        { description: 'Upper-cases a text', inputSchema: { text: z.string() } },
        async ({ text }) => {
          calls.push({ tool: 'shout', args: { text }, authorization });
          return { content: [{ type: 'text', text: text.toUpperCase() }] };
        }
      );
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => {
        void transport.close();
        void mcp.close();
      });
      await mcp.connect(transport);
      await transport.handleRequest(req, res, await readJson(req));
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    certFile: certificate.certFile,
    calls,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/**
 * A test file's execution stack whose agents can call the file's loopback MCP server: the server starts before the
 * stack and closes after the file's tests. No worker in the test process at the file's level (the files' crash tests
 * start worker processes on the same queue; `useTestWorker` adds one where a test needs it).
 * @param name the stack's name (its task queue).
 * @returns the stack and the server, whose fields are set once the file's `beforeAll` hooks ran.
 */
export function useStackWithMcpServer(name: string): { stack: ExecutionStack; mcp: McpTestServer } {
  const mcp = {} as McpTestServer;
  beforeAll(async () => {
    Object.assign(mcp, await startMcpTestServer());
  });
  const stack = useExecutionStack(
    name,
    () => ({
      DEFAULT_MODEL: 'claude-test',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      MCP_CA_FILE: mcp.certFile,
      MCP_TOOL_TIMEOUT_MS: '10000',
    }),
    { worker: false }
  );
  afterAll(async () => mcp.close?.());
  return { stack, mcp };
}
