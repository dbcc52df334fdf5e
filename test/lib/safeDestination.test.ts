import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import {
  refusedHostMessage,
  assertSafeUrl,
  isPrivateAddress,
  resolveSafe,
  safeLookup,
  UnsafeDestinationError,
  type Resolver,
} from '../../lib/safeDestination';

describe('safe destinations', () => {
  it.each([
    '127.0.0.1',
    '127.1.2.3',
    '10.0.0.1',
    '172.16.5.4',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254', // AWS / GCP / Azure IMDS
    '100.64.0.1', // CGNAT
    '100.100.100.200', // Alibaba metadata (CGNAT)
    '168.63.129.16', // Azure wire server
    '0.0.0.0',
    '255.255.255.255',
    '224.0.0.1',
    '::1',
    '::',
    'fe80::1',
    'fc00::1',
    'fd00:ec2::254', // AWS IMDS over IPv6
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:169.254.169.254',
    '::ffff:10.0.0.1',
    '::127.0.0.1', // IPv4-compatible
    '64:ff9b::a00:1', // NAT64 of 10.0.0.1
    '2002:a00:1::', // 6to4 of 10.0.0.1
  ])('refuses %s', (address) => {
    expect(isPrivateAddress(address)).toBe(true);
  });

  it.each(['93.184.215.14', '1.1.1.1', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8', '100.128.0.1'])(
    'accepts the public address %s',
    (address) => {
      expect(isPrivateAddress(address)).toBe(false);
    }
  );

  it('accepts only https URLs without credentials, and checks literal IP hosts', () => {
    expect(assertSafeUrl('https://hooks.example.com/x', { allowPrivate: false }).hostname).toBe('hooks.example.com');
    for (const bad of [
      'http://hooks.example.com/x',
      'ftp://hooks.example.com',
      'not a url',
      'https://user:pw@hooks.example.com/',
      'https://127.0.0.1/',
      'https://0x7f.1/', // WHATWG parsing turns it into 127.0.0.1
      'https://[::1]/',
      'https://[::ffff:a9fe:a9fe]/',
      'https://169.254.169.254/latest/meta-data',
    ]) {
      expect(() => assertSafeUrl(bad, { allowPrivate: false })).toThrow(UnsafeDestinationError);
    }
    expect(assertSafeUrl('https://127.0.0.1:8443/', { allowPrivate: true }).port).toBe('8443');
    expect(() => assertSafeUrl('http://127.0.0.1/', { allowPrivate: true })).toThrow(UnsafeDestinationError);
  });

  it('refuses a host when any of its answers is private (a mixed answer cannot be raced)', async () => {
    const resolver: Resolver = async () => [
      { address: '93.184.215.14', family: 4 },
      { address: '10.1.2.3', family: 4 },
    ];
    await expect(resolveSafe('mixed.example', { allowPrivate: false, resolver })).rejects.toMatchObject({
      message: refusedHostMessage('mixed.example'),
      detail: 'mixed.example resolves to an address that is not public (private)',
    });
    await expect(resolveSafe('mixed.example', { allowPrivate: true, resolver })).resolves.toHaveLength(2);
  });

  it('refuses at connect time: a name resolving to loopback never gets a connection unless allowed', async () => {
    let connections = 0;
    const server = http.createServer((_req, res) => res.end('ok'));
    server.on('connection', () => (connections += 1));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    // "rebinding.example" first answers a public address, then loopback: the check runs on the answer the socket uses.
    const answers = ['93.184.215.14', '127.0.0.1'];
    const resolver: Resolver = async () => [{ address: answers.shift() ?? '127.0.0.1', family: 4 }];
    try {
      await expect(resolveSafe('rebinding.example', { allowPrivate: false, resolver })).resolves.toHaveLength(1);
      const get = (allowPrivate: boolean): Promise<string> =>
        new Promise((resolve, reject) => {
          const req = http.get(
            { host: 'rebinding.example', port, path: '/', lookup: safeLookup({ allowPrivate, resolver }) as never },
            (res) => {
              res.resume();
              res.on('end', () => resolve(String(res.statusCode)));
            }
          );
          req.on('error', reject);
        });
      const refused = await get(false).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(UnsafeDestinationError);
      expect(connections).toBe(0);
      // The same request with private destinations allowed reaches the server: the refusal above was the check's.
      await expect(get(true)).resolves.toBe('200');
      expect(connections).toBe(1);
    } finally {
      server.close();
    }
  });

  it('works as net.connect lookup with all: true (autoSelectFamily)', async () => {
    const resolver: Resolver = async () => [{ address: '192.168.0.10', family: 4 }];
    const socket = net.connect({
      host: 'lan.example',
      port: 9,
      autoSelectFamily: true,
      lookup: safeLookup({ allowPrivate: false, resolver }) as never,
    });
    const [err] = (await once(socket, 'error').catch((e: unknown) => [e])) as unknown[];
    expect(err).toBeInstanceOf(UnsafeDestinationError);
    socket.destroy();
  });
});
