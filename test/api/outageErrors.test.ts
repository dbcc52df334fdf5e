/**
 * Which errors mean a dependency is away (api/middlewares/errors.ts `isDependencyOutage`, answered 503): here the
 * socket error the MongoDB driver passes on unwrapped when its server went away between two commands (seen as a 500
 * in test/scripts/selfHealing.test.ts before it was recognized).
 */
import net from 'node:net';
import { isDependencyOutage } from '../../api/middlewares/errors';

/** @returns node's own error for a write to a connection the other side has ended. */
async function writeAfterPeerEnded(): Promise<Error> {
  const server = net.createServer((socket) => socket.end());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  try {
    const client = net.connect({ port, host: '127.0.0.1' });
    client.on('error', () => undefined);
    await new Promise((r) => client.once('end', r));
    await new Promise((r) => setTimeout(r, 50)); // node ends its side of the socket after the peer's end
    return await new Promise<Error>((resolve) => client.write('ping', (err) => resolve(err!)));
  } finally {
    server.close();
  }
}

it('a write to a connection its server ended is an outage', async () => {
  const err = await writeAfterPeerEnded();
  expect(err.message).toBe('This socket has been ended by the other party');
  expect(isDependencyOutage(err)).toBe(true);
  expect(isDependencyOutage(new Error('wrapped', { cause: err }))).toBe(true);
});

it('an ordinary error is not', () => {
  expect(isDependencyOutage(new Error('boom'))).toBe(false);
  expect(isDependencyOutage(Object.assign(new Error('exists'), { code: 'EEXIST' }))).toBe(false);
});
