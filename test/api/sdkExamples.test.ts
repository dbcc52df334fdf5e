/**
 * `GET /api/sdk-examples`, checked the way a client developer would use it: the TypeScript types are generated
 * from this service's own /api/openapi.json with openapi-typescript (its CLI, the documented command), and the
 * served `create-agent` example is type-checked against them with openapi-fetch. A variant that breaks the
 * contract must not type-check, so the check cannot pass vacuously.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GENERATED_TYPES_FILE } from '../../api/current/sdkExamples';
import { useTestApp } from '../helpers/app';
import { useTestDatabase } from '../helpers/mongo';
import { ROOT } from '../helpers/processes';

useTestDatabase();
const t = useTestApp();
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'aas-sdk-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function typecheck(source: string): { status: number | null; output: string } {
  writeFileSync(path.join(dir, 'example.ts'), source);
  const modules = path.join(ROOT, 'node_modules');
  writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: 'es2022',
        module: 'esnext',
        moduleResolution: 'bundler',
        typeRoots: [path.join(modules, '@types')],
        types: ['node'],
        paths: { 'openapi-fetch': [path.join(modules, 'openapi-fetch')] },
      },
      files: ['example.ts', `${GENERATED_TYPES_FILE}.d.ts`],
    })
  );
  const res = spawnSync(process.execPath, [path.join(modules, 'typescript', 'bin', 'tsc'), '-p', dir], {
    encoding: 'utf8',
  });
  return { status: res.status, output: `${res.stdout}${res.stderr}` };
}

it('gives generation commands and the four examples', async () => {
  const res = await t.request.get('/api/sdk-examples');
  expect(res.status).toBe(200);
  expect(res.body.generate[0].command).toBe(
    `npx openapi-typescript ${t.config.appUrl}/api/openapi.json -o ${GENERATED_TYPES_FILE}.d.ts`
  );
  expect(res.body.examples.map((e: { name: string }) => e.name)).toEqual([
    'create-agent',
    'execute-stream',
    'chat-message',
    'verify-webhook',
  ]);
});

it('the create-agent example type-checks against types generated from /api/openapi.json', async () => {
  const doc = await t.request.get('/api/openapi.json');
  writeFileSync(path.join(dir, 'openapi.json'), doc.text);
  const gen = spawnSync(
    process.execPath,
    [
      path.join(ROOT, 'node_modules', 'openapi-typescript', 'bin', 'cli.js'),
      path.join(dir, 'openapi.json'),
      '-o',
      path.join(dir, `${GENERATED_TYPES_FILE}.d.ts`),
    ],
    { encoding: 'utf8' }
  );
  expect(gen.status).toBe(0);

  const examples = (await t.request.get('/api/sdk-examples')).body.examples as Array<{
    name: string;
    typescript: string;
  }>;
  const example = examples.find((e) => e.name === 'create-agent')!.typescript;
  const ok = typecheck(example);
  expect(ok.output).toBe('');
  expect(ok.status).toBe(0);

  // The same call without the required name, and reading a field the response does not have: refused.
  const broken = example.replace("name: 'Helper', ", '').replace('return data.id;', 'return data.nope;');
  expect(broken).not.toBe(example);
  const bad = typecheck(broken);
  expect(bad.status).not.toBe(0);
  expect(bad.output).toMatch(/name/);
  expect(bad.output).toMatch(/nope/);
}, 60_000);
