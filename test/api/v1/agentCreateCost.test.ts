/**
 * What creating an agent costs us (docs/benchmarks.md "Creating an agent: its round trips"): the database operations
 * of `POST /api/v1/agents` (mongoose's debug hook), caches warm. The list is the one written there: an operation
 * added to the path fails this test.
 */
import mongoose from 'mongoose';
import { buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { useTestApp } from '../../helpers/app';
import { v1As } from '../../helpers/v1';

useTestDatabase();
const t = useTestApp();

it('creating an agent: three inserts, at once', async () => {
  const org = await buildOrg();
  const as = v1As(t, org.apiToken);
  // Warm: the caches of read-mostly records (token, membership, the default space) as under load.
  expect((await as.post('/agents', { name: 'First', systemPrompt: 'x' })).status).toBe(200);
  const ops: string[] = [];
  mongoose.set('debug', (collection: string, method: string) => void ops.push(`${collection}.${method}`));
  try {
    expect((await as.post('/agents', { name: 'Second', systemPrompt: 'x' })).status).toBe(200);
  } finally {
    mongoose.set('debug', false);
  }
  // The chat, the agent and its space entry, written at once (commands/agents.ts createAgent).
  expect(ops.filter((o) => !o.startsWith('event_wakeup_targets.')).sort()).toEqual([
    'agents.insertOne',
    'chats.insertOne',
    'space_agents.insertOne',
  ]);
});
