/**
 * `npm start` (production): runs the compiled service process (HTTP and workflows, worker/service.ts) and
 * WORKER_PROCESSES worker-only processes (`npm run build` first) against the configured servers (MONGODB_URI and
 * TEMPORAL_ADDRESS must be set), under the supervisor (a process that dies is restarted with backoff). Needs only the
 * production dependencies. The processes run on the image's Node (scripts/lib/pinnedNode.ts). `npm run service` / `npm run worker` / `npm run api` (HTTP only) run one each.
 */
import path from 'node:path';
import { childEnv, loadConfigOrExit } from '../lib/config';
import { healthFiles } from './lib/healthFiles';
import { serviceNode } from './lib/pinnedNode';
import { serviceNodeArgs } from './lib/serviceHeap';
import { spawnUnit, supervise } from './lib/supervisor';
import { bundleWorkflowsTo } from './lib/workflowBundle';

const say = (line: string): void => void process.stderr.write(`[start] ${line}\n`);

const config = loadConfigOrExit();
if (!config.mongodbUri || !config.temporalAddress) {
  say('MONGODB_URI and TEMPORAL_ADDRESS must be set for npm start (npm run dev starts local servers instead)');
  process.exit(1);
}
const dist = path.resolve(__dirname, '..');
const bundle = path.join(config.dataDir, 'workflow-bundle.js');
async function main(): Promise<void> {
  // The image bundles the workflows when it is built (Dockerfile: WORKFLOW_BUNDLE); elsewhere, once per start.
  if (!config.workflowBundlePath) say('bundling the workflow code for the worker');
  const workflowBundle = config.workflowBundlePath ?? (await bundleWorkflowsTo(bundle));
  // Each process its own health file (scripts/lib/healthFiles.ts), when there is one.
  const files = healthFiles(config.workerHealthFile ?? '', config.workerProcesses);
  // The image's Node (scripts/lib/pinnedNode.ts): in the image, its own; from a checkout, the pinned one.
  const node = await serviceNode({ say });
  say(`service processes on Node ${node.version} (${node.path})`);
  const service = (entry: string, healthFile: string): ReturnType<typeof spawnUnit> =>
    spawnUnit({
      command: node.path,
      args: [...serviceNodeArgs(), path.join(dist, entry)],
      env: childEnv({
        WORKFLOW_BUNDLE: workflowBundle,
        ...(config.workerHealthFile ? { WORKER_HEALTH_FILE: healthFile } : {}),
      }),
      graceMs: 10_000,
    });
  const sup = supervise(
    // The service process serves HTTP and runs workflows (eager starts); worker-only processes add capacity.
    files.map(({ unit, file }) => ({
      name: unit,
      start: service(unit === 'service' ? 'worker/service.js' : 'worker/index.js', file),
    })),
    config.restart,
    say
  );
  process.on('SIGINT', () => sup.stop());
  process.on('SIGTERM', () => sup.stop());
  sup.started.catch((err: unknown) => say(`could not start: ${(err as Error)?.message ?? String(err)}`));
  void sup.done.then((code) => process.exit(code));
}

main().catch((err: unknown) => {
  say(`could not start: ${(err as Error)?.message ?? String(err)}`);
  process.exit(1);
});
