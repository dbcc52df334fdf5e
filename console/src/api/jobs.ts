/** The job calls of the review inbox and the job page (the current surface's /api/jobs), through the typed client. */
import type { JobAction } from '../lib/jobActions';
import { api, unwrap } from './client';
import type { paths } from './schema';

export type Job = paths['/api/jobs/{id}']['get']['responses'][200]['content']['application/json']['job'];
export type JobLineage = paths['/api/jobs/{id}/lineage']['get']['responses'][200]['content']['application/json'];

/** Query keys: everything of jobs under ['jobs'] (a job's change invalidates them all). */
export const jobKeys = {
  list: (status: string | null) => ['jobs', 'list', status] as const,
  one: (id: string) => ['jobs', 'one', id] as const,
  lineage: (id: string) => ['jobs', 'lineage', id] as const,
};

/** One page (20) of the organization's jobs, newest first, in one state or any. */
export async function listJobs(status: Job['status'] | null, cursor: string | undefined) {
  return unwrap(
    await api.GET('/api/jobs', {
      params: { query: { limit: 20, ...(status ? { status } : {}), ...(cursor ? { cursor } : {}) } },
    })
  );
}

export async function readJob(id: string): Promise<Job> {
  return unwrap(await api.GET('/api/jobs/{id}', { params: { path: { id } } })).job;
}

export async function readLineage(id: string): Promise<JobLineage> {
  return unwrap(await api.GET('/api/jobs/{id}/lineage', { params: { path: { id } } }));
}

/** One decision on a job: the action, its body, and its Idempotency-Key (the same key for a retry of it). */
export interface Decision {
  action: JobAction;
  body: Record<string, string>;
  key: string;
}

/**
 * @param id the job.
 * @param d the decision.
 * @returns the job in the state the action led to.
 * @throws ApiError (409 when the job's state does not allow it any more).
 */
export async function actOnJob(id: string, d: Decision): Promise<Job> {
  const params = { path: { id }, header: { 'Idempotency-Key': d.key } };
  switch (d.action) {
    case 'approve':
      return unwrap(await api.POST('/api/jobs/{id}/approve', { params, body: d.body })).job;
    case 'iterate':
      return unwrap(await api.POST('/api/jobs/{id}/iterate', { params, body: d.body as { feedback: string } })).job;
    case 'resume':
      return unwrap(await api.POST('/api/jobs/{id}/resume', { params, body: d.body as { input: string } })).job;
    case 'cancel':
      return unwrap(await api.POST('/api/jobs/{id}/cancel', { params, body: {} })).job;
  }
}
