import { classifyStatus, parseRetryAfter, sendWebhook } from '../../lib/webhookSender';
import { refusedHostMessage, type Resolver } from '../../lib/safeDestination';
import { signatureHeader, verifySignature } from '../../lib/webhookSignature';

describe('webhook sender', () => {
  it('classifies answers: 2xx delivered; 408, 429, 5xx transient; 3xx and other 4xx permanent', () => {
    expect([200, 201, 204, 299].map(classifyStatus)).toEqual(Array(4).fill('delivered'));
    expect([408, 429, 500, 502, 503, 599].map(classifyStatus)).toEqual(Array(6).fill('transient'));
    expect([301, 302, 307, 308, 400, 401, 403, 404, 410, 422].map(classifyStatus)).toEqual(Array(10).fill('permanent'));
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('7', now)).toBe(7);
    expect(parseRetryAfter(new Date(now + 30_000).toUTCString(), now)).toBe(30);
    expect(parseRetryAfter(new Date(now - 30_000).toUTCString(), now)).toBe(0);
    expect(parseRetryAfter(undefined, now)).toBeNull();
    expect(parseRetryAfter('soon', now)).toBeNull();
  });

  it('a destination resolving to a private address fails permanently before any connection', async () => {
    const asked: string[] = [];
    const resolver: Resolver = async (host) => {
      asked.push(host);
      return [{ address: '169.254.169.254', family: 4 }];
    };
    const base = { body: '{}', headers: {}, timeoutMs: 2000, maxResponseBytes: 1024, excerptBytes: 64, resolver };
    const refused = await sendWebhook({ ...base, url: 'https://metadata.example/hook', allowPrivate: false });
    expect(refused).toMatchObject({ outcome: 'permanent', status: null });
    expect(refused.error).toBe(refusedHostMessage('metadata.example'));
    expect(refused.detail).toBe('metadata.example resolves to an address that is not public (linkLocal)');
    expect(asked).toEqual(['metadata.example']);
    const http = await sendWebhook({ ...base, url: 'http://hooks.example/x', allowPrivate: true });
    expect(http).toMatchObject({ outcome: 'permanent', error: 'The destination must use https' });
  });

  it('signs one v1 per secret; the spec rule accepts each and refuses a changed body', () => {
    const header = signatureHeader(['whsec_a', 'whsec_b'], 1_700_000_000, '{"x":1}');
    expect(header).toMatch(/^t=1700000000,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect(verifySignature(header, 'whsec_a', '{"x":1}')).toBe(true);
    expect(verifySignature(header, 'whsec_b', '{"x":1}')).toBe(true);
    expect(verifySignature(header, 'whsec_c', '{"x":1}')).toBe(false);
    expect(verifySignature(header, 'whsec_a', '{"x":2}')).toBe(false);
  });
});
