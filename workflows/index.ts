/**
 * @module workflows: every workflow of the service, bundled by the worker (deterministic code only).
 * One workflow per file.
 */
export { agentExecution } from './agentExecution';
export { job } from './job';
export { webhookDelivery } from './webhookDelivery';
export { webhookDestination } from './webhookDestination';
export { webhookTest } from './webhookTest';
export { missionRun } from './missionRun';
export { missionSkips } from './missionSkips';
export { repoClone } from './repoClone';
