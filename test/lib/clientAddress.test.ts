/**
 * The client address behind a reverse proxy (lib/clientAddress.ts, TRUST_PROXY in lib/config.ts): X-Forwarded-For is
 * read only from a trusted peer, from its right end past every trusted proxy.
 */
import { clientAddress } from '../../lib/clientAddress';
import { ConfigError, loadConfig } from '../../lib/config';

describe('TRUST_PROXY', () => {
  it('is parsed into CIDR ranges; a bad entry is a configuration error', () => {
    expect(loadConfig({}).trustProxy).toEqual([]);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.1, 192.168.0.0/16,::1' }).trustProxy).toEqual([
      '10.0.0.1/32',
      '192.168.0.0/16',
      '::1/128',
    ]);
    expect(() => loadConfig({ TRUST_PROXY: '10.0.0.1,proxy.local' })).toThrow(ConfigError);
  });
});

describe('clientAddress', () => {
  const trusted = ['10.0.0.0/8'];
  it('is the peer, header ignored, when the peer is not a trusted proxy (or none is configured)', () => {
    expect(clientAddress('203.0.113.5', '198.51.100.1', trusted)).toBe('203.0.113.5');
    expect(clientAddress('10.0.0.2', '198.51.100.1', [])).toBe('10.0.0.2');
    expect(clientAddress('::ffff:127.0.0.1', undefined, [])).toBe('127.0.0.1');
  });

  it('behind trusted proxies, is the rightmost address that is not one of them', () => {
    expect(clientAddress('10.0.0.2', '198.51.100.1', trusted)).toBe('198.51.100.1');
    // A client's own header value comes first: the proxy appended the real address after it.
    expect(clientAddress('10.0.0.2', '1.2.3.4, 198.51.100.1', trusted)).toBe('198.51.100.1');
    expect(clientAddress('10.0.0.2', '1.2.3.4, 198.51.100.1, 10.0.0.7', trusted)).toBe('198.51.100.1');
    expect(clientAddress('10.0.0.2', ['1.2.3.4', '198.51.100.1'], trusted)).toBe('198.51.100.1');
    // No header, or a hop that is not an address: as far as the chain can be followed.
    expect(clientAddress('10.0.0.2', undefined, trusted)).toBe('10.0.0.2');
    expect(clientAddress('10.0.0.2', 'unknown, 10.0.0.9', trusted)).toBe('10.0.0.9');
  });
});
