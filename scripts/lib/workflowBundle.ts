/**
 * The workflow code bundled once by the launcher (`npm run dev`, `npm start`, the benchmarks, the jest set-up) and
 * handed to the worker as a file (WORKFLOW_BUNDLE), so the worker process never loads webpack: measured, it kept
 * the bundler's memory for its whole life (docs/benchmarks.md). A worker restarted by the supervisor reuses the
 * same file. Without WORKFLOW_BUNDLE the worker bundles by itself (`npm run worker`).
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { WORKFLOW_INTERCEPTOR_MODULES } from '../../lib/dataConverter';

/**
 * @param file where to write the bundle (its directory is created).
 * @returns the file.
 */
export async function bundleWorkflowsTo(file: string): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../../workflows'),
    workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES,
    logger: new DefaultLogger('WARN'),
  });
  mkdirSync(path.dirname(file), { recursive: true });
  const partial = `${file}.${process.pid}.partial`;
  writeFileSync(partial, code);
  renameSync(partial, file); // a reader never sees half a bundle
  return file;
}
