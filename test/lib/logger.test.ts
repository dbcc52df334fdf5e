import { createLogger } from '../../lib/logger';

describe('createLogger', () => {
  it('redacts authorization headers, tokens and secrets wherever they appear', () => {
    const lines: string[] = [];
    const logger = createLogger({ logLevel: 'info', logPretty: false }, 'test', {
      write: (l: string) => void lines.push(l),
    });
    logger.info(
      {
        req: { headers: { authorization: 'Bearer td_leak1', cookie: 'sid=leak2' } },
        token: 'td_leak3',
        result: { apiToken: 'td_leak4', serviceToken: 'svc_leak5', signingSecret: 'leak6', keep: 'visible' },
        authorization: 'Bearer leak7',
      },
      'hello'
    );
    const out = lines.join('');
    for (let i = 1; i <= 7; i++) expect(out).not.toContain(`leak${i}`);
    expect(out).toContain('[redacted]');
    expect(JSON.parse(out)).toMatchObject({ name: 'test', msg: 'hello', result: { keep: 'visible' } });
  });

  it('child loggers carry the request id and keep redacting', () => {
    const lines: string[] = [];
    const child = createLogger({ logLevel: 'info', logPretty: false }, 'api', {
      write: (l: string) => void lines.push(l),
    }).child({ reqId: 'r-1' });
    child.warn({ token: 'td_secret' }, 'x');
    const line = JSON.parse(lines[0]);
    expect(line).toMatchObject({ reqId: 'r-1', token: '[redacted]', level: 40 });
  });
});
