/**
 * Private payloads (issue 27 point 4): what the service hands to Temporal is sealed with a key derived from
 * ENCRYPTION_KEY. A history read straight from the server (the raw gRPC answer, no codec) holds no user text, nor
 * does the memo; the service's own client reads it all back; the codec endpoint opens it for an operator with its
 * token, and only for them; a browser UI origin gets its CORS preflight answered.
 */
import { randomBytes } from 'node:crypto';
import { temporal } from '@temporalio/proto';
import { buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { v1As } from '../helpers/v1';
import { useExecutionStack } from '../helpers/worker';
import { executionWorkflowId } from '../../workflows/ids';
import { jobWorkflowStart } from '../../commands/jobs';
import type { JobDoc } from '../../models';

useTestDatabase();
const CODEC_TOKEN = randomBytes(24).toString('hex');
const UI_ORIGIN = 'http://127.0.0.1:8233';
const stack = useExecutionStack('private-payloads', {
  TEMPORAL_CODEC_TOKEN: CODEC_TOKEN,
  TEMPORAL_CODEC_CORS_ORIGINS: UI_ORIGIN,
});

/** Runs an execution whose message (and so its echoed reply) carries a marker; returns the marker and its id. */
async function executeWithMarker(): Promise<{ marker: string; executionId: string }> {
  const org = await buildOrg();
  const as = v1As(stack.t, org.apiToken);
  const agent = await as.post('/agents', { name: 'Private agent name', systemPrompt: 'x' });
  const marker = `private-text-${randomBytes(6).toString('hex')}`;
  const res = await as.post(`/agents/${agent.body.id}/execute`, { message: `tell me about ${marker}` });
  expect(res.status).toBe(200);
  expect(res.body.result).toContain(marker); // the fake model echoes it: it is in the reply too
  // The answer comes with the outcome, before the workflow task completes: the history is whole once it has.
  await stack.t.temporal.client.workflow.getHandle(executionWorkflowId(res.body.executionId)).result();
  return { marker, executionId: res.body.executionId };
}

/** The raw history and description, read with the connection's own gRPC service (no data converter). */
async function rawFromServer(
  workflowId: string
): Promise<{ history: Buffer; description: temporal.api.workflowservice.v1.DescribeWorkflowExecutionResponse }> {
  const service = stack.t.temporal.connection.workflowService;
  const namespace = stack.t.config.temporalNamespace;
  const { history } = await service.getWorkflowExecutionHistory({ namespace, execution: { workflowId } });
  const description = await service.describeWorkflowExecution({ namespace, execution: { workflowId } });
  return {
    history: Buffer.from(temporal.api.history.v1.History.encode(history!).finish()),
    description: description as temporal.api.workflowservice.v1.DescribeWorkflowExecutionResponse,
  };
}

describe('payloads sealed in Temporal', () => {
  it('a history read straight from the server holds no user text; the service reads it back', async () => {
    const { marker, executionId } = await executeWithMarker();
    const workflowId = executionWorkflowId(executionId);
    const { history, description } = await rawFromServer(workflowId);
    expect(history.length).toBeGreaterThan(0);
    expect(history.includes(Buffer.from(marker))).toBe(false);
    expect(history.includes(Buffer.from('Echo: tell me'))).toBe(false);
    expect(history.includes(Buffer.from('binary/encrypted'))).toBe(true);
    // The memo: sealed too, and it holds ids only (no message, no agent name).
    const memo = Buffer.from(temporal.api.common.v1.Memo.encode(description.workflowExecutionInfo!.memo!).finish());
    expect(memo.includes(Buffer.from(marker))).toBe(false);
    expect(memo.includes(Buffer.from('Private agent name'))).toBe(false);
    // The service's own client (same data converter) opens everything.
    const handle = stack.t.temporal.client.workflow.getHandle(workflowId);
    expect(JSON.stringify(await handle.result())).toContain(marker);
    const opened = await (await handle.describe()).memo;
    expect(opened).toMatchObject({ model: expect.any(String), chatId: expect.stringMatching(/^chat_/) });
    expect(JSON.stringify(opened)).not.toContain('Private agent name');
  }, 60_000);

  it('a job memo names ids only (no title, no goal)', () => {
    const start = jobWorkflowStart(
      {
        _id: 'job_1',
        organizationId: 'org_1',
        agentId: 'agt_1',
        spaceId: 'spc_1',
        chatId: 'chat_1',
        title: 'secret title',
        goal: 'secret goal',
      } as unknown as JobDoc,
      60
    );
    expect(JSON.stringify(start.memo)).not.toMatch(/secret/);
  });
});

describe('the codec endpoint (Temporal codec server protocol)', () => {
  it('opens the sealed payloads of a history for the operator, in the protocol’s JSON form', async () => {
    const { marker, executionId } = await executeWithMarker();
    const { history } = await rawFromServer(executionWorkflowId(executionId));
    const events = temporal.api.history.v1.History.decode(history).events ?? [];
    const completed = events.find((e) => e.workflowExecutionCompletedEventAttributes)!;
    const sealed = completed.workflowExecutionCompletedEventAttributes!.result!.payloads!;
    const json = sealed.map((p) => ({
      metadata: Object.fromEntries(
        Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')])
      ),
      data: Buffer.from(p.data ?? []).toString('base64'),
    }));
    const res = await stack.t.request
      .post('/codec/decode')
      .set('Authorization', `Bearer ${CODEC_TOKEN}`)
      .set('X-Namespace', stack.t.config.temporalNamespace)
      .send({ payloads: json });
    expect(res.status).toBe(200);
    const [opened] = res.body.payloads;
    expect(Buffer.from(opened.metadata.encoding, 'base64').toString()).toBe('json/plain');
    expect(Buffer.from(opened.data, 'base64').toString()).toContain(marker);

    // The browser form: the token in the path (the Web UI cannot send a header).
    const viaPath = await stack.t.request.post(`/codec/${CODEC_TOKEN}/decode`).send({ payloads: json });
    expect(viaPath.body).toEqual(res.body);

    // encode → decode round trip; a clear payload passes through decode unchanged (histories from before).
    const clear = {
      metadata: { encoding: Buffer.from('json/plain').toString('base64') },
      data: Buffer.from('"hi"').toString('base64'),
    };
    const encoded = await stack.t.request
      .post('/codec/encode')
      .set('Authorization', `Bearer ${CODEC_TOKEN}`)
      .send({ payloads: [clear] });
    expect(Buffer.from(encoded.body.payloads[0].metadata.encoding, 'base64').toString()).toBe('binary/encrypted');
    const back = await stack.t.request
      .post('/codec/decode')
      .set('Authorization', `Bearer ${CODEC_TOKEN}`)
      .send({ payloads: [encoded.body.payloads[0], clear] });
    expect(back.body.payloads).toEqual([clear, clear]);
  }, 60_000);

  it('refuses a caller without the token (401) and a malformed body (400); answers the UI’s preflight', async () => {
    const body = { payloads: [] };
    expect((await stack.t.request.post('/codec/decode').send(body)).status).toBe(401);
    expect((await stack.t.request.post('/codec/decode').set('Authorization', 'Bearer wrong').send(body)).status).toBe(
      401
    );
    expect((await stack.t.request.post('/codec/not-the-token/decode').send(body)).status).toBe(401);
    const org = await buildOrg(); // a tenant's token is not the operator's
    expect(
      (await stack.t.request.post('/codec/decode').set('Authorization', `Bearer ${org.apiToken}`).send(body)).status
    ).toBe(401);
    const bad = await stack.t.request
      .post('/codec/decode')
      .set('Authorization', `Bearer ${CODEC_TOKEN}`)
      .send({ payloads: 'x' });
    expect(bad.status).toBe(400);
    const tampered = await stack.t.request
      .post('/codec/decode')
      .set('Authorization', `Bearer ${CODEC_TOKEN}`)
      .send({
        payloads: [
          {
            metadata: { encoding: Buffer.from('binary/encrypted').toString('base64') },
            data: Buffer.alloc(40).toString('base64'),
          },
        ],
      });
    expect(tampered.status).toBe(400);

    const preflight = await stack.t.request
      .options('/codec/decode')
      .set('Origin', UI_ORIGIN)
      .set('Access-Control-Request-Method', 'POST')
      .set('Access-Control-Request-Headers', 'content-type,x-namespace');
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe(UI_ORIGIN);
    expect(preflight.headers['access-control-allow-headers']).toMatch(/X-Namespace/);
    const other = await stack.t.request.options('/codec/decode').set('Origin', 'https://evil.example');
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
  });
});
