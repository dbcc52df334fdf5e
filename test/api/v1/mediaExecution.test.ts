/**
 * Media reach the model: an execution with `mediaIds` sends the fake Anthropic server (through the official SDK, the
 * real workflow and worker) the image as a base64 image block and a text file as a framed text block, before the
 * message, in the user turn; the execution record keeps only the ids. Unknown and foreign ids are 400 before
 * anything is stored; a PDF is refused for an OpenAI-compatible model.
 */
import { randomBytes } from 'node:crypto';
import sharp from 'sharp';
import type { FakeBlock } from '../../../scripts/fakes/anthropic';
import { Chat, Execution } from '../../../models';
import { bearer, buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { v1As, v1Error } from '../../helpers/v1';
import { useExecutionStack } from '../../helpers/worker';

useTestDatabase();
// An OpenAI-compatible address too (never called): an agent may name an OpenAI model.
const stack = useExecutionStack('media-exec', {
  DEFAULT_MODEL: 'claude-test',
  OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
});

async function upload(token: string, content: Buffer, filename: string, contentType: string): Promise<string> {
  const res = await stack.t.request
    .post('/api/v1/media')
    .set('Authorization', bearer(token))
    .attach('file', content, { filename, contentType });
  expect(res.status).toBe(200);
  return res.body.media.id;
}

it('the image and the text file reach the model in the user turn, before the message', async () => {
  const org = await buildOrg();
  const api = v1As(stack.t, org.apiToken);
  const image = await sharp({ create: { width: 2, height: 2, channels: 4, background: '#00ff00' } })
    .png()
    .toBuffer();
  const imageId = await upload(org.apiToken, image, 'green.png', 'image/png');
  const textId = await upload(org.apiToken, Buffer.from('a,b\n1,2\n'), 'data.csv', 'text/csv');
  const agent = (await api.post('/agents', { name: 'Looker', systemPrompt: 'You look at things.' })).body.id;

  const message = `what is this ${randomBytes(4).toString('hex')}`;
  const res = await api.post(`/agents/${agent}/execute`, { message, mediaIds: [imageId, textId] });
  expect(res.status).toBe(200);
  const csv = '<attached-file name="data.csv" type="text/csv">\na,b\n1,2\n\n</attached-file>';
  expect(res.body.result).toBe(`Echo: ${csv}${message}`);

  const sent = stack.fake.requests.filter((r) => JSON.stringify(r.messages).includes(message));
  expect(sent).toHaveLength(1);
  const turn = sent[0].messages!.at(-1)!;
  expect(turn.role).toBe('user');
  expect(turn.content as FakeBlock[]).toEqual([
    { type: 'image', source: { type: 'base64', media_type: 'image/png', data: image.toString('base64') } },
    { type: 'text', text: csv },
    { type: 'text', text: message },
  ]);

  // The record keeps the ids only, and shows them.
  const exec = (await api.get(`/executions/${res.body.executionId}`)).body.execution;
  expect(exec.input).toEqual({ message, mediaIds: [imageId, textId] });
  const stored = await Execution.findById(res.body.executionId).lean();
  expect(JSON.stringify(stored).length).toBeLessThan(4000);

  // Without media the user turn is the message alone, as before.
  const plain = `plain ${randomBytes(4).toString('hex')}`;
  expect((await api.post(`/agents/${agent}/execute`, { message: plain })).status).toBe(200);
  const plainTurn = stack.fake.requests.find((r) => JSON.stringify(r.messages).includes(plain))!.messages!.at(-1)!;
  expect(plainTurn.content).toBe(plain);
}, 60_000);

it('unknown, foreign and repeated ids are 400 before anything is stored; a deleted medium becomes a note', async () => {
  const org = await buildOrg();
  const other = await buildOrg();
  const api = v1As(stack.t, org.apiToken);
  const agent = (await api.post('/agents', { name: 'Looker', systemPrompt: 'You look.' })).body.id;
  const foreign = await upload(other.apiToken, Buffer.from('theirs'), 'theirs.txt', 'text/plain');
  const chatsBefore = await Chat.countDocuments({ organizationId: org.organizationId });
  for (const [ids, message] of [
    [['med_nope'], 'Invalid mediaIds: media med_nope not found'],
    [[foreign], `Invalid mediaIds: media ${foreign} not found`],
  ] as const) {
    const res = await api.post(`/agents/${agent}/execute`, { message: 'hi', mediaIds: ids });
    expect([res.status, res.body]).toEqual([400, v1Error(400, 'Bad Request', message)]);
  }
  const twice = await api.post(`/agents/${agent}/execute`, { message: 'hi', mediaIds: [foreign, foreign] });
  expect(twice.status).toBe(400);
  expect(await Chat.countDocuments({ organizationId: org.organizationId })).toBe(chatsBefore);
  expect(await Execution.countDocuments({ organizationId: org.organizationId })).toBe(0);

  // The client-library execute takes them too.
  const mine = await upload(org.apiToken, Buffer.from('# Title\n'), 'notes.md', 'application/octet-stream');
  const message = `notes ${randomBytes(4).toString('hex')}`;
  const client = await stack.t.request
    .post('/api/agent/execute')
    .set('Authorization', bearer(org.apiToken))
    .send({ characterId: agent, message, mediaIds: [mine] });
  expect([client.status, client.body.result]).toEqual([
    200,
    `Echo: <attached-file name="notes.md" type="text/markdown">\n# Title\n\n</attached-file>${message}`,
  ]);

  // A medium deleted before the model call: the model is told it is gone.
  const gone = await upload(org.apiToken, Buffer.from('soon gone'), 'gone.txt', 'text/plain');
  const { userTurn } = await import('../../../commands/mediaTurn');
  await api.del(`/media/${gone}`);
  const turn = await userTurn(
    { organizationId: org.organizationId, input: { message: 'm', mediaIds: [gone] } },
    stack.t.config
  );
  expect(turn.content).toEqual([
    { type: 'text', text: `[An attached file (${gone}) is no longer available: it was deleted.]` },
    { type: 'text', text: 'm' },
  ]);
}, 60_000);

it('a PDF goes to an Anthropic model as a document block, and is refused for an OpenAI-compatible one', async () => {
  const org = await buildOrg();
  const api = v1As(stack.t, org.apiToken);
  const pdf = Buffer.from('%PDF-1.4\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n');
  const pdfId = await upload(org.apiToken, pdf, 'report.pdf', 'application/pdf');
  const claude = (await api.post('/agents', { name: 'Reader', systemPrompt: 'Read.' })).body.id;
  const message = `read ${randomBytes(4).toString('hex')}`;
  expect((await api.post(`/agents/${claude}/execute`, { message, mediaIds: [pdfId] })).status).toBe(200);
  const turn = stack.fake.requests.find((r) => JSON.stringify(r.messages).includes(message))!.messages!.at(-1)!;
  expect((turn.content as FakeBlock[])[0]).toEqual({
    type: 'document',
    title: 'report.pdf',
    source: { type: 'base64', media_type: 'application/pdf', data: pdf.toString('base64') },
  });

  const gpt = (await api.post('/agents', { name: 'Other', systemPrompt: 'Read.', model: 'openai:gpt-4o' })).body.id;
  const refused = await api.post(`/agents/${gpt}/execute`, { message: 'read', mediaIds: [pdfId] });
  expect([refused.status, refused.body.message]).toEqual([
    400,
    `Invalid mediaIds: media ${pdfId} is a PDF, which only Anthropic models read; this agent’s model is an OpenAI-compatible one`,
  ]);
}, 60_000);
