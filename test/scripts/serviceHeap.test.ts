/**
 * The V8 heap flags every launcher gives a service process (scripts/lib/serviceHeap.ts), and that they do what they
 * say on the running Node: the young generation stays at 16 MiB semi-spaces (Node 24's default lets them grow to
 * 64), the old generation's limit at 1 GiB; an operator's NODE_OPTIONS wins for the flag it sets.
 */
import { execFileSync } from 'node:child_process';
import { serviceNodeArgs } from '../../scripts/lib/serviceHeap';

it('gives both flags, and leaves each one NODE_OPTIONS sets to it', () => {
  expect(serviceNodeArgs({})).toEqual(['--max-old-space-size=1024', '--max-semi-space-size=16']);
  expect(serviceNodeArgs({ NODE_OPTIONS: '--max-old-space-size=2048' })).toEqual(['--max-semi-space-size=16']);
  expect(serviceNodeArgs({ NODE_OPTIONS: '--max_semi_space_size=64' })).toEqual(['--max-old-space-size=1024']);
  expect(serviceNodeArgs({ NODE_OPTIONS: '--max-old-space-size=512 --max-semi-space-size=8' })).toEqual([]);
});

it('bounds the young generation of a node started with them, on this Node', () => {
  // Objects that live a little while (a ring of 20,000) make V8 grow its new space as far as it may.
  const program = `
    const v8 = require('node:v8');
    const ring = new Array(20000);
    let max = 0;
    for (let i = 0; i < 2e7; i++) {
      ring[i % ring.length] = { a: i, b: [i, i + 1] };
      if (i % 100000 === 0) max = Math.max(max, v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size);
    }
    console.log(JSON.stringify({ newSpaceMiB: max / 1048576, limitMiB: v8.getHeapStatistics().heap_size_limit / 1048576 }));`;
  const run = (args: string[]): { newSpaceMiB: number; limitMiB: number } =>
    JSON.parse(
      execFileSync(process.execPath, [...args, '-e', program], { env: { PATH: process.env.PATH } }).toString()
    );
  const bounded = run(serviceNodeArgs({}));
  // Two semi-spaces of at most 16 MiB.
  expect(bounded.newSpaceMiB).toBeLessThanOrEqual(32);
  expect(bounded.limitMiB).toBeGreaterThanOrEqual(1024);
  expect(bounded.limitMiB).toBeLessThan(1024 + 64 + 16);
});
