/**
 * A real git server over https on loopback, made in the test: a bare repository served by `git http-backend`
 * (CGI) behind a node https server with a self-signed certificate for `localhost` (made with openssl). Options:
 * a required access token (HTTP basic auth), and a pause before answering the pack request (to kill a worker
 * mid-clone).
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { loopbackCertificate } from '../../scripts/fakes/certificate';

export interface GitServer {
  /** `https://localhost:<port>/<name>.git` */
  url: string;
  /** The CA file to trust (the server's own certificate). */
  caFile: string;
  /** The commits of the served branch, newest first. */
  commits: string[];
  /** Authorization headers received on git requests. */
  authorizations: (string | undefined)[];
  /** Resolves when the first pack request (`git-upload-pack` POST) arrives. */
  packRequested: Promise<void>;
  /** Pack requests received. */
  packRequests: number;
  close(): Promise<void>;
}

const git = (cwd: string, ...args: string[]): string =>
  execFileSync('git', args, {
    cwd,
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', HOME: cwd },
    encoding: 'utf8',
  }).trim();

/**
 * @param options token: required as the basic-auth password; packDelayMs: pause before the first pack answer.
 * @returns the running server.
 */
export async function startGitServer(options: { token?: string; packDelayMs?: number } = {}): Promise<GitServer> {
  const root = mkdtempSync(path.join(os.tmpdir(), 'git-server-'));
  const work = path.join(root, 'work');
  execFileSync('mkdir', ['-p', work]);
  git(work, 'init', '--quiet', '--initial-branch=main');
  git(work, 'config', 'user.email', 't@example.com');
  git(work, 'config', 'user.name', 'Test');
  writeFileSync(path.join(work, 'README.md'), '# Project\n');
  git(work, 'add', '.');
  git(work, 'commit', '--quiet', '-m', 'first');
  writeFileSync(path.join(work, 'data.csv'), 'a,b\n1,2\n');
  git(work, 'add', '.');
  git(work, 'commit', '--quiet', '-m', 'second');
  git(root, 'clone', '--quiet', '--bare', work, path.join(root, 'project.git'));
  const commits = git(work, 'log', '--format=%H').split('\n');

  const certificate = loopbackCertificate(root);

  const authorizations: (string | undefined)[] = [];
  const children = new Set<ReturnType<typeof spawn>>();
  let packRequests = 0;
  let onPack: () => void = () => undefined;
  const packRequested = new Promise<void>((r) => (onPack = r));
  const expected = options.token
    ? `Basic ${Buffer.from(`x-access-token:${options.token}`).toString('base64')}`
    : undefined;

  const server = https.createServer({ key: certificate.key, cert: certificate.cert }, (req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'https://localhost');
      authorizations.push(req.headers.authorization);
      if (expected && req.headers.authorization !== expected) {
        res.writeHead(401, { 'www-authenticate': 'Basic realm="git"' });
        res.end();
        return;
      }
      const isPack = req.method === 'POST' && url.pathname.endsWith('/git-upload-pack');
      if (isPack) {
        packRequests += 1;
        onPack();
        if (packRequests === 1 && options.packDelayMs) await new Promise((r) => setTimeout(r, options.packDelayMs));
      }
      const cgi = spawn('git', ['http-backend'], {
        env: {
          PATH: process.env.PATH,
          GIT_PROJECT_ROOT: root,
          GIT_HTTP_EXPORT_ALL: '1',
          PATH_INFO: url.pathname,
          QUERY_STRING: url.search.slice(1),
          REQUEST_METHOD: req.method ?? 'GET',
          CONTENT_TYPE: req.headers['content-type'] ?? '',
          HTTP_CONTENT_ENCODING: req.headers['content-encoding'] ?? '',
          HTTP_GIT_PROTOCOL: String(req.headers['git-protocol'] ?? ''),
          REMOTE_ADDR: '127.0.0.1',
        },
      });
      children.add(cgi);
      cgi.on('close', () => children.delete(cgi));
      // A client that went away (its git killed) leaves nothing behind.
      res.on('close', () => {
        if (!res.writableFinished) cgi.kill('SIGKILL');
      });
      cgi.stdin.on('error', () => undefined);
      req.pipe(cgi.stdin);
      let head = Buffer.alloc(0);
      let headersDone = false;
      cgi.stdout.on('data', (chunk: Buffer) => {
        if (headersDone) {
          res.write(chunk);
          return;
        }
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        headersDone = true;
        let status = 200;
        const headers: Record<string, string> = {};
        for (const line of head.subarray(0, end).toString('utf8').split('\r\n')) {
          const i = line.indexOf(':');
          const name = line.slice(0, i).trim();
          const value = line.slice(i + 1).trim();
          if (name.toLowerCase() === 'status') status = Number(value.split(' ')[0]);
          else headers[name] = value;
        }
        res.writeHead(status, headers);
        res.write(head.subarray(end + 4));
      });
      cgi.on('close', () => res.end());
    })();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://localhost:${port}/project.git`,
    caFile: certificate.certFile,
    commits,
    authorizations,
    packRequested,
    get packRequests() {
      return packRequests;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const child of children) child.kill('SIGKILL');
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
