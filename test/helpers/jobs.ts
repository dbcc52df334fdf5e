/**
 * Jobs through the current surface, for the tests: an organization with an agent and a workspace, a job started
 * with a goal (the fake model reads protocol markers in it: `[[request_review]]`, `[[block: …]]`), and waiting for a
 * status.
 */
import { currentAs } from './current';
import { buildOrg } from './factories';
import { until } from './until';
import type { TestApp } from './app';

export interface JobSetup {
  token: string;
  organizationId: string;
  api: ReturnType<typeof currentAs>;
  agentId: string;
  workspaceId: string;
}

/** The parts of a job's JSON the tests read. */
export interface JobJson {
  status: string;
  question: string | null;
  review: { state: string };
  iterations: { reason: string; input: string; execution_id: string }[];
  artifacts: { id: string; content: string }[];
  links: { chat_id: string };
}

/** @returns a new organization with an agent and a workspace, and its service-token client. */
export async function jobSetup(t: TestApp): Promise<JobSetup> {
  const org = await buildOrg();
  const api = currentAs(t, org.serviceToken);
  const agent = await api.post('/agents', { name: 'Worker', system_prompt: 'Do the work.' });
  const ws = await api.post('/workspaces', { name: 'Jobs' });
  return {
    token: org.serviceToken,
    organizationId: org.organizationId,
    api,
    agentId: agent.body.agent.id,
    workspaceId: ws.body.workspace.id,
  };
}

/** @returns the id of a new job of the setup's agent with `goal`. */
export async function newJob(s: JobSetup, goal: string, extra: object = {}): Promise<string> {
  const res = await s.api.post('/jobs', { agent_id: s.agentId, workspace_id: s.workspaceId, goal, ...extra });
  expect(res.status).toBe(201);
  return res.body.job.id;
}

/** @returns the job once its status is `status` (fails after `timeoutMs`). */
export async function waitForStatus(s: JobSetup, id: string, status: string, timeoutMs = 20_000): Promise<JobJson> {
  const read = async (): Promise<JobJson | undefined> => (await s.api.get(`/jobs/${id}`)).body.job;
  return (await until(read, (job) => job?.status === status, timeoutMs, 100, `job ${id} ${status}`))!;
}
