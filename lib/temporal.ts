/**
 * Temporal client factory. The api uses a lazy connection so it starts (and reports not-ready) while Temporal is
 * down; the first call connects.
 */
import { Client, Connection } from '@temporalio/client';
import type { Config } from './config';

export interface TemporalDeps {
  connection: Connection;
  client: Client;
  namespace: string;
  taskQueue: string;
}

/**
 * Creates a lazily connecting client.
 * @param config address, namespace and task queue.
 * @returns the connection and client.
 */
export function createTemporal(
  config: Pick<Config, 'temporalAddress' | 'temporalNamespace' | 'temporalTaskQueue'>
): TemporalDeps {
  const connection = Connection.lazy({ address: config.temporalAddress ?? '127.0.0.1:7233', connectTimeout: 5000 });
  const client = new Client({ connection, namespace: config.temporalNamespace });
  return { connection, client, namespace: config.temporalNamespace, taskQueue: config.temporalTaskQueue };
}

/**
 * Checks that the namespace is reachable.
 * @param deps the connection and namespace.
 * @param timeoutMs deadline.
 */
export async function pingTemporal(
  deps: Pick<TemporalDeps, 'connection' | 'namespace'>,
  timeoutMs = 2000
): Promise<void> {
  await deps.connection.withDeadline(Date.now() + timeoutMs, () =>
    deps.connection.workflowService.describeNamespace({ namespace: deps.namespace })
  );
}
