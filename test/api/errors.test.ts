import zlib from 'node:zlib';
import Koa from 'koa';
import Router from '@koa/router';
import supertest from 'supertest';
import type { AppState } from '../../api/context';
import { errorHandler } from '../../api/middlewares/errors';
import { jsonBody } from '../../api/middlewares/body';
import { requestId } from '../../api/middlewares/requestId';
import { useTestApp } from '../helpers/app';
import { testLogger } from '../helpers/env';
import { bearer, buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';

useTestDatabase();
/** Sends a Buffer as it is (superagent would JSON-encode it under a JSON Content-Type). */
const raw = (b: Buffer): string => b as unknown as string;
const t = useTestApp({ BODY_LIMIT_BYTES: '2048' });

describe('error envelopes', () => {
  it('unknown route: 404 in the v1 shape under /api/v1 and the current shape elsewhere', async () => {
    const org = await buildOrg();
    const v1 = await t.request.get('/api/v1/nope').set('Authorization', bearer(org.apiToken));
    expect(v1.status).toBe(404);
    expect(v1.body).toEqual({ error: true, statusCode: 404, statusMessage: 'Not Found', message: 'Route not found' });
    const cur = await t.request.get('/api/nope');
    expect(cur.status).toBe(404);
    expect(cur.body).toEqual({ error: { code: 'not_found', message: 'Route not found' } });
    expect(cur.headers['x-request-id']).toBeTruthy();
  });

  it('malformed JSON: 400 Invalid JSON in request body on both surfaces', async () => {
    const org = await buildOrg();
    const v1 = await t.request
      .post('/api/v1/profile')
      .set('Authorization', bearer(org.apiToken))
      .set('Content-Type', 'application/json')
      .send('{"name": ');
    expect(v1.status).toBe(400);
    expect(v1.body).toEqual({
      error: true,
      statusCode: 400,
      statusMessage: 'Bad Request',
      message: 'Invalid JSON in request body',
    });
    const cur = await t.request.post('/api/version').set('Content-Type', 'application/json').send('not json');
    expect(cur.status).toBe(400);
    expect(cur.body).toEqual({ error: { code: 'invalid_json', message: 'Invalid JSON in request body' } });
  });

  it('a JSON scalar body is refused as invalid JSON (bodies are objects or arrays)', async () => {
    const res = await t.request.post('/api/version').set('Content-Type', 'application/json').send('"text"');
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_json');
  });

  it('body over the limit: 413', async () => {
    const res = await t.request
      .post('/api/version')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ blob: 'x'.repeat(4096) }));
    expect(res.status).toBe(413);
    expect(res.body).toEqual({
      error: { code: 'payload_too_large', message: 'Request body exceeds the limit of 2048 bytes' },
    });
  });

  it('a non-JSON body: 415', async () => {
    const res = await t.request.post('/api/version').set('Content-Type', 'text/plain').send('hello');
    expect(res.status).toBe(415);
    expect(res.body).toEqual({
      error: { code: 'unsupported_media_type', message: 'Content-Type must be application/json' },
    });
  });
});

describe('Content-Encoding of bodies', () => {
  const json = Buffer.from(JSON.stringify({ name: 'Renamed' }));

  it.each(['gzip', 'deflate', 'br'])(
    '%s declared on bytes that are not: 400 on both surfaces, never 500',
    async (coding) => {
      const org = await buildOrg();
      const v1 = await t.request
        .patch('/api/v1/profile')
        .set('Authorization', bearer(org.apiToken))
        .set('Content-Type', 'application/json')
        .set('Content-Encoding', coding)
        .serialize(raw)
        .send(json);
      expect(v1.status).toBe(400);
      expect(v1.body).toEqual({
        error: true,
        statusCode: 400,
        statusMessage: 'Bad Request',
        message: `Request body could not be decoded as Content-Encoding ${coding}`,
      });
      const cur = await t.request
        .post('/api/version')
        .set('Content-Type', 'application/json')
        .set('Content-Encoding', coding)
        .serialize(raw)
        .send(json);
      expect(cur.status).toBe(400);
      expect(cur.body).toEqual({
        error: {
          code: 'invalid_content_encoding',
          message: `Request body could not be decoded as Content-Encoding ${coding}`,
        },
      });
    }
  );

  it('a truncated gzip body: 400', async () => {
    const gz = zlib.gzipSync(json);
    const res = await t.request
      .post('/api/version')
      .set('Content-Type', 'application/json')
      .set('Content-Encoding', 'gzip')
      .serialize(raw)
      .send(gz.subarray(0, gz.length - 6));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_content_encoding');
  });

  it('an unsupported Content-Encoding: 415 naming Content-Encoding (v1 and current)', async () => {
    const org = await buildOrg();
    const v1 = await t.request
      .patch('/api/v1/profile')
      .set('Authorization', bearer(org.apiToken))
      .set('Content-Type', 'application/json')
      .set('Content-Encoding', 'foo')
      .serialize(raw)
      .send(json);
    expect(v1.status).toBe(415);
    expect(v1.body).toEqual({
      error: true,
      statusCode: 415,
      statusMessage: 'Unsupported Media Type',
      message: 'Content-Encoding must be gzip, deflate, br or identity',
    });
    const cur = await t.request
      .post('/api/version')
      .set('Content-Type', 'application/json')
      .set('Content-Encoding', 'foo')
      .serialize(raw)
      .send(json);
    expect(cur.status).toBe(415);
    expect(cur.body).toEqual({
      error: { code: 'unsupported_media_type', message: 'Content-Encoding must be gzip, deflate, br or identity' },
    });
  });

  it('the decoded size is capped by the body limit: 413', async () => {
    const bomb = zlib.gzipSync(Buffer.from(JSON.stringify({ blob: 'x'.repeat(1_000_000) })));
    expect(bomb.length).toBeLessThan(2048);
    const res = await t.request
      .post('/api/version')
      .set('Content-Type', 'application/json')
      .set('Content-Encoding', 'gzip')
      .serialize(raw)
      .send(bomb);
    expect(res.status).toBe(413);
    expect(res.body).toEqual({
      error: { code: 'payload_too_large', message: 'Request body exceeds the limit of 2048 bytes' },
    });
  });

  it('a well-encoded body is decoded and applied (codings are case-insensitive)', async () => {
    const org = await buildOrg();
    const res = await t.request
      .patch('/api/v1/profile')
      .set('Authorization', bearer(org.apiToken))
      .set('Content-Type', 'application/json')
      .set('Content-Encoding', 'GZIP')
      .serialize(raw)
      .send(zlib.gzipSync(json));
    expect(res.status).toBe(200);
    const profile = await t.request.get('/api/v1/profile').set('Authorization', bearer(org.apiToken));
    expect(profile.body.user.name).toBe('Renamed');
  });
});

describe('request ids', () => {
  it('echoes a well-formed incoming x-request-id', async () => {
    const res = await t.request.get('/healthz').set('x-request-id', 'client-req-42');
    expect(res.headers['x-request-id']).toBe('client-req-42');
  });

  it('generates one when absent or malformed', async () => {
    const a = await t.request.get('/healthz');
    const b = await t.request.get('/healthz').set('x-request-id', 'bad id with spaces');
    expect(a.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(b.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
  });
});

describe('unexpected errors', () => {
  // The real error middleware in front of a route that fails in an unplanned way.
  const logger = testLogger();
  const app = new Koa<AppState>();
  const router = new Router<AppState>();
  router.get('/api/v1/boom', () => {
    throw new Error('secret internals: connection string mongodb://user:pw@host');
  });
  router.get('/api/boom', () => {
    throw new TypeError('cannot read properties of undefined');
  });
  router.post('/api/echo', (ctx) => {
    ctx.body = ctx.request.body;
  });
  app.use(requestId(logger));
  app.use(errorHandler({ bodyLimitBytes: 1024 }));
  app.use(jsonBody({ limitBytes: 1024 }));
  app.use(router.routes());
  const request = supertest(app.callback());

  it('500 An unexpected error occurred, no internals in the body', async () => {
    const v1 = await request.get('/api/v1/boom');
    expect(v1.status).toBe(500);
    expect(v1.body).toEqual({
      error: true,
      statusCode: 500,
      statusMessage: 'Internal Server Error',
      message: 'An unexpected error occurred',
    });
    expect(JSON.stringify(v1.body)).not.toContain('secret');
    const cur = await request.get('/api/boom');
    expect(cur.body).toEqual({ error: { code: 'internal_error', message: 'An unexpected error occurred' } });
    expect(cur.headers['x-request-id']).toBeTruthy();
  });

  it('parses JSON bodies (application/json and +json)', async () => {
    const a = await request.post('/api/echo').set('Content-Type', 'application/json').send({ a: 1 });
    expect(a.body).toEqual({ a: 1 });
    const b = await request.post('/api/echo').set('Content-Type', 'application/merge-patch+json').send('{"b":2}');
    expect(b.body).toEqual({ b: 2 });
  });

  it('decodes gzip, deflate and br bodies', async () => {
    const body = Buffer.from('{"c":3}');
    const encoders = { gzip: zlib.gzipSync, deflate: zlib.deflateSync, br: zlib.brotliCompressSync };
    for (const [coding, encode] of Object.entries(encoders)) {
      const res = await request
        .post('/api/echo')
        .set('Content-Type', 'application/json')
        .set('Content-Encoding', coding)
        .serialize(raw)
        .send(encode(body));
      expect(res.body).toEqual({ c: 3 });
    }
  });
});
