/** Jest global teardown: stops the servers started by the global setup and removes their data. */
import { rmSync } from 'node:fs';
import type { TestServers } from './helpers/servers';

export default async function globalTeardown(): Promise<void> {
  const servers = (globalThis as { __AAS_TEST_SERVERS__?: TestServers }).__AAS_TEST_SERVERS__;
  if (!servers) return;
  await servers.stop();
  rmSync(servers.dataDir, { recursive: true, force: true });
}
