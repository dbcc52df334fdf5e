/**
 * lib/mongo.ts `insertDocument` stores exactly what `Model.create` stores (casts, defaults, timestamps, minimize),
 * for every model the hot paths insert with it, and refuses what `Model.create` refuses.
 */
import type mongoose from 'mongoose';
import { insertDocument } from '../../lib/mongo';
import { Agent, Chat, ChatMessage, Execution, Session, SpaceAgent } from '../../models';
import { useTestDatabase } from '../helpers/mongo';

useTestDatabase();

type AnyModel = mongoose.Model<any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** A stored document without its id and times, keys sorted, each value with its type. */
function shape(doc: Record<string, unknown> | null): string {
  const entries = Object.entries(doc ?? {})
    .filter(([k]) => !['_id', 'createdAt', 'updatedAt'].includes(k))
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => [k, v, typeof v, v instanceof Date]);
  return JSON.stringify(entries);
}

const cases: Array<[string, AnyModel, Record<string, unknown>]> = [
  [
    'agent',
    Agent,
    {
      organizationId: 'o',
      userId: 'u',
      ownerId: 'u',
      name: 'n',
      systemPrompt: 'p',
      spaceId: 's',
      chatId: 'c',
      tags: ['x'],
    },
  ],
  ['chat', Chat, { organizationId: 'o', spaceId: 's', agentId: 'a', ownerId: 'u', title: 't' }],
  [
    'chat with a subdocument',
    Chat,
    { organizationId: 'o', spaceId: 's', ownerId: 'u', forkedFrom: { chatId: 'c0', messageId: 'm', executionId: 'e' } },
  ],
  ['space agent', SpaceAgent, { organizationId: 'o', spaceId: 's', agentId: 'a' }],
  ['session', Session, { organizationId: 'o', chatId: 'c', agentId: 'a', activeExecutionId: 'e', turns: 1 }],
  [
    'chat message',
    ChatMessage,
    { organizationId: 'o', chatId: 'c', sessionId: 's', executionId: 'e', role: 'user', content: 'hi', position: 2 },
  ],
  [
    'execution',
    Execution,
    {
      organizationId: 'o',
      agentId: 'a',
      userId: 'u',
      chatId: 'c',
      sessionId: 's',
      spaceId: 'sp',
      turn: 1,
      provider: 'anthropic',
      model: 'm',
      rootExecutionId: 'x',
      input: { message: 'hi' },
    },
  ],
];

it.each(cases)('%s: stored as Model.create stores it', async (name, model, fields) => {
  const created = (await model.create({ _id: `by-create ${name}`, ...fields })).toObject();
  const inserted = await insertDocument(model, { _id: `by-insert ${name}`, ...fields });
  const [a, b] = await Promise.all([
    model.collection.findOne({ _id: `by-create ${name}` } as never),
    model.collection.findOne({ _id: `by-insert ${name}` } as never),
  ]);
  expect(shape(b)).toBe(shape(a));
  expect(b!.createdAt).toBeInstanceOf(Date);
  expect(Object.keys(inserted).sort()).toEqual(Object.keys(created).sort());
});

it('refuses what Model.create refuses: a missing required field, a value outside its enum', async () => {
  await expect(insertDocument(Chat, { _id: 'refused', organizationId: 'o' })).rejects.toThrow(/validation failed/i);
  await expect(
    insertDocument(ChatMessage, { organizationId: 'o', chatId: 'c', sessionId: 's', role: 'nobody', content: 'x' })
  ).rejects.toThrow(/validation failed/i);
  expect(await Chat.findById('refused').lean()).toBeNull();
});

it('refuses as Model.validate refuses: the same paths, kinds and messages', async () => {
  const cases: Array<[AnyModel, Record<string, unknown>]> = [
    [Chat, { organizationId: 'o', status: 'asleep' }],
    [
      Agent,
      {
        organizationId: 'o',
        userId: 'u',
        ownerId: 'u',
        name: 'n',
        systemPrompt: 'p',
        spaceId: 's',
        chatId: 'c',
        maxConcurrentExecutions: 0,
      },
    ],
    [
      Agent,
      {
        organizationId: 'o',
        userId: 'u',
        name: 'n',
        systemPrompt: 'p',
        spaceId: 's',
        chatId: 'c',
        visibility: 'secret',
        maxConcurrentExecutions: 1001,
      },
    ],
  ];
  for (const [model, fields] of cases) {
    const expected = await model.validate({ ...fields }).then(
      () => undefined,
      (err: mongoose.Error.ValidationError) => err
    );
    const got = await insertDocument(model, { ...fields }).then(
      () => undefined,
      (err: mongoose.Error.ValidationError) => err
    );
    expect(expected).toBeDefined();
    expect(got).toBeInstanceOf(Error);
    const summary = (err: mongoose.Error.ValidationError | undefined) =>
      Object.entries(err?.errors ?? {})
        .map(([path, e]) => [path, e.kind, e.message])
        .sort();
    expect(summary(got)).toEqual(summary(expected));
    expect(got!.name).toBe('ValidationError');
  }
});
