/**
 * `GET /api/sdk-examples`: how to generate a typed client from the contract, and short curl and TypeScript
 * examples. The TypeScript of `create-agent` is type-checked in the tests against types generated from this
 * service's own document (test/api/sdkExamples.test.ts), so it cannot drift from the contract.
 */

export interface SdkExample {
  name: string;
  title: string;
  curl: string;
  typescript: string;
}

/** The file name the generation command writes, imported by the TypeScript examples. */
export const GENERATED_TYPES_FILE = 'api-schema';

/**
 * @param appUrl the public base address.
 * @returns the examples.
 */
export function sdkExamples(appUrl: string): {
  generate: Array<{ step: string; command: string }>;
  examples: SdkExample[];
} {
  const base = appUrl.replace(/\/+$/, '');
  return {
    generate: [
      {
        step: 'Generate TypeScript types from the contract',
        command: `npx openapi-typescript ${base}/api/openapi.json -o ${GENERATED_TYPES_FILE}.d.ts`,
      },
      { step: 'Install the typed fetch client', command: 'npm install openapi-fetch' },
    ],
    examples: [
      {
        name: 'create-agent',
        title: 'Create an agent (v1 surface, personal access token)',
        curl: `curl -s -X POST ${base}/api/v1/agents \\
  -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \\
  -d '{"name":"Helper","systemPrompt":"Be brief."}'`,
        typescript: `import createClient from 'openapi-fetch';
import type { paths } from './${GENERATED_TYPES_FILE}';

/** @param token a personal access token (the caller's secret store, never source code). */
export async function createAgent(token: string): Promise<string> {
  const client = createClient<paths>({
    baseUrl: '${base}',
    headers: { Authorization: \`Bearer \${token}\` },
  });
  const { data, error } = await client.POST('/api/v1/agents', {
    body: { name: 'Helper', systemPrompt: 'Be brief.' },
  });
  if (error) throw new Error(error.message);
  return data.id;
}
`,
      },
      {
        name: 'execute-stream',
        title: 'Execute an agent and read its server-sent events',
        curl: `curl -N -X POST ${base}/api/v1/agents/$AGENT_ID/execute \\
  -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \\
  -d '{"message":"Hello","stream":true}'`,
        typescript: `import { createParser } from 'eventsource-parser';

export async function executeStreaming(token: string, agentId: string, message: string): Promise<string> {
  const res = await fetch(\`${base}/api/v1/agents/\${agentId}/execute\`, {
    method: 'POST',
    headers: { Authorization: \`Bearer \${token}\`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ message, stream: true }),
  });
  let text = '';
  let lastEventId: string | undefined; // resume with GET /api/v1/executions/{id}/stream + Last-Event-ID
  const parser = createParser({
    onEvent(e) {
      lastEventId = e.id;
      const data = JSON.parse(e.data);
      if (e.event === 'message' && data.messageType === 'stream_event') text += data.delta.text;
      if (e.event === 'error') throw new Error(data.message);
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of res.body!) parser.feed(decoder.decode(chunk, { stream: true }));
  return text;
}
`,
      },
      {
        name: 'chat-message',
        title: 'Send a message in a durable chat and follow its events (current surface, service token)',
        curl: `curl -s -X POST ${base}/api/chats -H "Authorization: Bearer $SERVICE_TOKEN" \\
  -H 'Content-Type: application/json' -H "Idempotency-Key: $(uuidgen)" \\
  -d '{"agent_id":"'$AGENT_ID'","workspace_id":"'$WORKSPACE_ID'"}'
curl -s -X POST ${base}/api/chats/$CHAT_ID/messages -H "Authorization: Bearer $SERVICE_TOKEN" \\
  -H 'Content-Type: application/json' -d '{"message":"Summarise the open tasks"}'
curl -N ${base}/api/chats/$CHAT_ID/events -H "Authorization: Bearer $SERVICE_TOKEN"`,
        typescript: `export async function sendChatMessage(serviceToken: string, chatId: string, message: string): Promise<unknown> {
  const res = await fetch(\`${base}/api/chats/\${chatId}/messages\`, {
    method: 'POST',
    headers: {
      Authorization: \`Bearer \${serviceToken}\`,
      'Content-Type': 'application/json',
      'Idempotency-Key': crypto.randomUUID(),
    },
    body: JSON.stringify({ message }),
  });
  if (!res.ok) throw new Error((await res.json()).error.message);
  return res.json();
}
`,
      },
      {
        name: 'verify-webhook',
        title: 'Verify a webhook signature (Service-Signature: t=<timestamp>,v1=<hex>)',
        curl: `# v1 = hex(HMAC-SHA256(secret, "<t>.<raw body>")); compare in constant time
printf '%s.%s' "$T" "$RAW_BODY" | openssl dgst -sha256 -hmac "$SIGNING_SECRET" -hex`,
        typescript: `import { createHmac, timingSafeEqual } from 'node:crypto';

/** rawBody: the unparsed request body; toleranceS: reject old deliveries (replays). */
export function verifySignature(header: string, rawBody: string, secret: string, toleranceS = 300): boolean {
  const parts = header.split(',').map((p) => p.trim().split('='));
  const t = parts.find(([k]) => k === 't')?.[1];
  const signatures = parts.filter(([k]) => k === 'v1').map(([, v]) => v);
  if (!t || signatures.length === 0 || Math.abs(Date.now() / 1000 - Number(t)) > toleranceS) return false;
  const expected = createHmac('sha256', secret).update(\`\${t}.\${rawBody}\`).digest();
  return signatures.some((s) => {
    const got = Buffer.from(s, 'hex');
    return got.length === expected.length && timingSafeEqual(got, expected);
  });
}
`,
      },
    ],
  };
}
