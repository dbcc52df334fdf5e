/**
 * Factories for test data: organizations and members built through the same commands the service uses; agents and
 * workspaces through the current surface, as a client makes them.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { bootstrapOrganization, type BootstrapResult } from '../../commands/bootstrap';
import { recordPendingExecution, type PendingExecution } from '../../commands/executionStart';
import { createToken } from '../../commands/tokens';
import { newExecutionId } from '../../lib/ids';
import { Membership, User, type ExecutionDoc } from '../../models';
import type { TestApp } from './app';

const rand = (): string => randomBytes(4).toString('hex');

/**
 * @param overrides organization name.
 * @returns a new organization with its owner and two tokens (v1 `td_` and `*` service).
 */
export async function buildOrg(overrides: { org?: string } = {}): Promise<BootstrapResult> {
  return bootstrapOrganization({ org: overrides.org ?? `Org ${rand()}`, email: `owner-${rand()}@example.com` });
}

/**
 * Adds a member to an organization.
 * @param organizationId the organization.
 * @param role member role.
 * @returns the user id, a v1 token and a `*` service token.
 */
export async function buildMember(
  organizationId: string,
  role: 'admin' | 'member' = 'member'
): Promise<{ userId: string; apiToken: string; serviceToken: string }> {
  const user = await User.create({ email: `member-${rand()}@example.com`, name: 'Member' });
  await Membership.create({ organizationId, userId: user._id, role });
  const { token } = await createToken({ organizationId, userId: user._id, kind: 'v1' });
  const service = await createToken({ organizationId, userId: user._id, kind: 'service' });
  return { userId: user._id, apiToken: token, serviceToken: service.token };
}

/**
 * @param org the organization (owner is used).
 * @param scopes service token scopes.
 * @returns a clear service token.
 */
export async function buildServiceToken(org: BootstrapResult, scopes: string[]): Promise<string> {
  const { token } = await createToken({
    organizationId: org.organizationId,
    userId: org.userId,
    kind: 'service',
    scopes,
  });
  return token;
}

/** @returns an `Authorization` header value. */
export function bearer(token: string): string {
  return `Bearer ${token}`;
}

/**
 * An agent of the organization, made with `POST /api/agents`.
 * @param t the app under test.
 * @param org the organization (its `*` service token is used).
 * @param body the agent's fields (default: a name and a one-word system prompt).
 * @returns the agent's id.
 */
export async function buildAgent(
  t: TestApp,
  org: BootstrapResult,
  body: { name: string; system_prompt: string } & Record<string, unknown> = { name: 'Agent', system_prompt: 'p' }
): Promise<string> {
  const res = await t.request.post('/api/agents').set('Authorization', bearer(org.serviceToken)).send(body);
  return res.body.agent.id as string;
}

/**
 * A workspace, made with `POST /api/workspaces`.
 * @param t the app under test.
 * @param options `name` (default `Workspace`); `org`: its organization (default: a new one).
 * @returns its organization, its id and its directory on disk.
 */
export async function buildWorkspace(
  t: TestApp,
  options: { name?: string; org?: BootstrapResult } = {}
): Promise<{ org: BootstrapResult; id: string; dir: string }> {
  const org = options.org ?? (await buildOrg());
  const res = await t.request
    .post('/api/workspaces')
    .set('Authorization', bearer(org.serviceToken))
    .send({ name: options.name ?? 'Workspace' });
  const id = res.body.workspace.id as string;
  return { org, id, dir: path.join(t.config.workspacesDir, org.organizationId, id) };
}

/**
 * Records another execution like `like` (its organization, agent, user, chat, session and model), as the api's start
 * does (commands/executionStart.ts `recordPendingExecution`), for a test that then starts its workflow itself.
 * @param like an execution of the test's.
 * @param fields its turn and message, and any field to add (e.g. an eager start's claim).
 * @returns the record.
 */
export async function recordExecutionLike(
  like: ExecutionDoc,
  fields: { turn: number; message: string } & Partial<PendingExecution>
): Promise<ExecutionDoc> {
  const id = fields._id ?? newExecutionId();
  return recordPendingExecution({
    _id: id,
    organizationId: like.organizationId,
    agentId: like.agentId,
    userId: like.userId,
    chatId: like.chatId,
    sessionId: like.sessionId,
    spaceId: like.spaceId,
    provider: like.provider,
    model: like.model,
    modelNote: null,
    parentExecutionId: null,
    rootExecutionId: id,
    taskId: null,
    source: 'v1',
    chatSeqBase: 0,
    ...fields,
  });
}
