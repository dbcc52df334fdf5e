/**
 * `npm start` (production): runs the compiled api and worker against the configured servers (MONGODB_URI and
 * TEMPORAL_ADDRESS must be set). `npm run api` / `npm run worker` run one each.
 */
import path from 'node:path';
import { childEnv, loadConfigOrExit } from '../lib/config';
import { supervise } from './lib/supervisor';

const say = (line: string): void => void process.stderr.write(`[start] ${line}\n`);

const config = loadConfigOrExit();
if (!config.mongodbUri || !config.temporalAddress) {
  say('MONGODB_URI and TEMPORAL_ADDRESS must be set for npm start (npm run dev starts local servers instead)');
  process.exit(1);
}
const dist = path.resolve(__dirname, '..');
const env = childEnv({});
const sup = supervise(
  [
    { name: 'worker', command: process.execPath, args: [path.join(dist, 'worker', 'index.js')], env },
    { name: 'api', command: process.execPath, args: [path.join(dist, 'api', 'server.js')], env },
  ],
  10_000,
  say
);
process.on('SIGINT', () => sup.stop());
process.on('SIGTERM', () => sup.stop());
void sup.done.then((code) => process.exit(code));
