/**
 * /api/v1/media over real HTTP on the real servers: uploads (multipart/form-data) of a real PNG and of text files,
 * the type read from the content (a mismatch or an unsupported type is 415, nothing kept), the size cap (413 from
 * the declared length and from a streamed body without one, nothing left on disk), read, download, list (paged,
 * total), delete (file and record; again 404; who may), another organization's 404 on every route, and the
 * contract (OpenAPI, agent-readiness).
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, existsSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { Media } from '../../../models';
import { useTestApp } from '../../helpers/app';
import { bearer, buildMember, buildOrg } from '../../helpers/factories';
import { useTestDatabase } from '../../helpers/mongo';
import { v1As, v1Error } from '../../helpers/v1';

useTestDatabase();
const MEDIA_DIR = mkdtempSync(path.join(os.tmpdir(), 'media-test-'));
const MAX = 64 * 1024;
const t = useTestApp({ MEDIA_DIR, MEDIA_MAX_BYTES: String(MAX) });

/** A real 3×2 PNG. */
const png = (): Promise<Buffer> =>
  sharp({ create: { width: 3, height: 2, channels: 3, background: '#ff0000' } })
    .png()
    .toBuffer();

function upload(token: string, content: Buffer, filename: string, contentType?: string) {
  return t.request
    .post('/api/v1/media')
    .set('Authorization', bearer(token))
    .attach('file', content, { filename, ...(contentType ? { contentType } : {}) });
}

/** Files in the organization's media directory (temporary ones included). */
const filesOf = (organizationId: string): string[] => {
  const dir = path.join(MEDIA_DIR, organizationId);
  return existsSync(dir) ? readdirSync(dir) : [];
};

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

describe('upload, read, download', () => {
  it('a PNG: the record, the file on disk, metadata and the same bytes back', async () => {
    const org = await buildOrg();
    const bytes = await png();
    const res = await upload(org.apiToken, bytes, 'red.png', 'image/png');
    expect(res.status).toBe(200);
    const media = res.body.media;
    expect(media).toEqual({
      id: expect.stringMatching(/^med_/),
      name: 'red.png',
      contentType: 'image/png',
      size: bytes.length,
      sha256: sha256(bytes),
      width: 3,
      height: 2,
      organizationId: org.organizationId,
      ownerId: org.userId,
      createdAt: expect.any(String),
    });
    expect(filesOf(org.organizationId)).toEqual([media.id]);

    const api = v1As(t, org.apiToken);
    expect((await api.get(`/media/${media.id}`)).body).toEqual({ success: true, media });
    const down = await api.get(`/media/${media.id}/content`).buffer(true);
    expect(down.status).toBe(200);
    expect(down.headers['content-type']).toBe('image/png');
    expect(down.headers['content-disposition']).toBe('inline; filename="red.png"');
    expect(down.headers['x-content-type-options']).toBe('nosniff');
    expect(Buffer.compare(down.body as Buffer, bytes)).toBe(0);
  });

  it('text files: the type from the claim, or from the extension when the claim says nothing', async () => {
    const org = await buildOrg();
    const cases: Array<[string, string, string | undefined, string]> = [
      ['notes.md', '# Notes\n- one\n', 'application/octet-stream', 'text/markdown'],
      ['readme.txt', 'plain words, é ü 漢字\n', 'text/plain', 'text/plain'],
      ['data.csv', 'a,b\n1,2\n', 'text/csv', 'text/csv'],
      ['data.json', '{"a": [1, 2]}', 'application/octet-stream', 'application/json'],
      ['script.py', 'print("hi")\n', 'application/octet-stream', 'text/plain'],
    ];
    for (const [name, text, claim, expected] of cases) {
      const res = await upload(org.apiToken, Buffer.from(text), name, claim);
      expect([name, res.status, res.body.media?.contentType]).toEqual([name, 200, expected]);
      expect(res.body.media).not.toHaveProperty('width');
      const down = await v1As(t, org.apiToken).get(`/media/${res.body.media.id}/content`).buffer(true);
      expect(down.headers['content-type']).toBe(`${expected}; charset=utf-8`);
      expect(down.text).toBe(text);
    }
  });
});

describe('refusals (v1 errors, nothing kept)', () => {
  it('a type the content contradicts, an unsupported type or content: 415', async () => {
    const org = await buildOrg();
    const image = await png();
    const cases: Array<[Buffer, string, string, string]> = [
      [
        image,
        'red.jpg',
        'image/jpeg',
        'The content does not match its declared type: declared image/jpeg, the content is image/png',
      ],
      [
        Buffer.from('just text'),
        'fake.png',
        'image/png',
        'The content does not match its declared type: declared image/png, the content is text',
      ],
      [
        Buffer.from('{not json'),
        'bad.json',
        'application/json',
        'The content does not match its declared type: declared application/json, the content is text that is not valid JSON',
      ],
      [
        Buffer.from('<html></html>'),
        'page.html',
        'text/html',
        expect.stringMatching(/^Unsupported media type text\/html: accepted are image\/png, /) as never,
      ],
      [
        Buffer.from([0x50, 0x4b, 0x03, 0x04, 0, 0, 0xff, 0x00]),
        'archive.zip',
        'application/octet-stream',
        expect.stringMatching(/^Unsupported content: not a PNG, JPEG, GIF, WebP or PDF file, nor UTF-8 text/) as never,
      ],
      // A PNG signature whose header does not decode.
      [
        Buffer.concat([image.subarray(0, 8), randomBytes(40)]),
        'broken.png',
        'image/png',
        'The content is not a valid PNG image',
      ],
    ];
    for (const [content, name, claim, message] of cases) {
      const res = await upload(org.apiToken, content, name, claim);
      expect([name, res.status, res.body]).toEqual([name, 415, v1Error(415, 'Unsupported Media Type', message)]);
    }
    expect(filesOf(org.organizationId)).toEqual([]);
    expect(await Media.countDocuments({ organizationId: org.organizationId })).toBe(0);
  });

  it('over MEDIA_MAX_BYTES: 413 from the declared length, and from a streamed body once the cap is passed', async () => {
    const org = await buildOrg();
    const big = Buffer.alloc(MAX + 1, 'a');
    const declared = await upload(org.apiToken, Buffer.alloc(MAX + 128 * 1024, 'a'), 'big.txt', 'text/plain');
    const tooLarge = v1Error(413, 'Payload Too Large', `Media exceeds the limit of ${MAX} bytes (MEDIA_MAX_BYTES)`);
    expect([declared.status, declared.body]).toEqual([413, tooLarge]);

    // Chunked (no Content-Length): the write stops at the cap, the rest is read and dropped, the answer is 413.
    const boundary = `----b${randomBytes(8).toString('hex')}`;
    const url = new URL(`${await t.listen()}/api/v1/media`);
    const streamed = await new Promise<{ status: number; body: unknown }>((resolve, reject) => {
      const req = http.request(
        url,
        {
          method: 'POST',
          headers: {
            Authorization: bearer(org.apiToken),
            'Content-Type': `multipart/form-data; boundary=${boundary}`,
            'Transfer-Encoding': 'chunked',
          },
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
        }
      );
      req.on('error', reject);
      req.write(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.txt"\r\n` +
          'Content-Type: text/plain\r\n\r\n'
      );
      for (let i = 0; i < 4; i++) req.write(big);
      req.end(`\r\n--${boundary}--\r\n`);
    });
    expect(streamed).toEqual({ status: 413, body: tooLarge });
    expect(filesOf(org.organizationId)).toEqual([]);
    expect(await Media.countDocuments({ organizationId: org.organizationId })).toBe(0);

    // Exactly the cap is accepted.
    const atCap = await upload(org.apiToken, Buffer.alloc(MAX, 'a'), 'cap.txt', 'text/plain');
    expect([atCap.status, atCap.body.media?.size]).toEqual([200, MAX]);
  });

  it('bodies that are not one file part: 415 or 400', async () => {
    const org = await buildOrg();
    const api = v1As(t, org.apiToken);
    const json = await api.post('/media', { file: 'x' });
    expect([json.status, json.body]).toEqual([
      415,
      v1Error(415, 'Unsupported Media Type', 'Content-Type must be multipart/form-data with a file part named file'),
    ]);
    const auth = bearer(org.apiToken);
    const noFile = await t.request.post('/api/v1/media').set('Authorization', auth).field('name', 'x');
    expect([noFile.status, noFile.body.message]).toEqual([
      400,
      'Unexpected field name: Send one part: a file named file',
    ]);
    const otherName = await t.request
      .post('/api/v1/media')
      .set('Authorization', auth)
      .attach('upload', Buffer.from('hi'), { filename: 'a.txt', contentType: 'text/plain' });
    expect([otherName.status, otherName.body.message]).toEqual([
      400,
      'Unexpected part upload: Send one part: a file named file',
    ]);
    const two = await t.request
      .post('/api/v1/media')
      .set('Authorization', auth)
      .attach('file', Buffer.from('one'), { filename: 'a.txt', contentType: 'text/plain' })
      .attach('file', Buffer.from('two'), { filename: 'b.txt', contentType: 'text/plain' });
    expect([two.status, two.body.message]).toEqual([400, 'Too many parts: Send one part: a file named file']);
    const empty = await t.request
      .post('/api/v1/media')
      .set('Authorization', auth)
      .set('Content-Type', 'multipart/form-data; boundary=xyz')
      .send('--xyz--\r\n');
    expect([empty.status, empty.body.message]).toEqual([400, 'Missing required field: file (a file part)']);
    const cut = await t.request
      .post('/api/v1/media')
      .set('Authorization', auth)
      .set('Content-Type', 'multipart/form-data; boundary=xyz')
      .send('--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nhalf a file');
    expect([cut.status, cut.body.error]).toEqual([400, true]);
    const unauthenticated = await t.request.post('/api/v1/media').attach('file', Buffer.from('x'), 'a.txt');
    expect(unauthenticated.status).toBe(401);
    expect(filesOf(org.organizationId)).toEqual([]);
  });
});

describe('list and delete', () => {
  it('lists newest first in pages with the total; delete removes file and record, then 404', async () => {
    const org = await buildOrg();
    const api = v1As(t, org.apiToken);
    const ids: string[] = [];
    for (const n of [1, 2, 3])
      ids.push((await upload(org.apiToken, Buffer.from(`file ${n}`), `f${n}.txt`)).body.media.id);
    const first = await api.get('/media?limit=2');
    expect(first.status).toBe(200);
    expect([first.body.total, first.body.media.map((m: { id: string }) => m.id)]).toEqual([3, [ids[2], ids[1]]]);
    const next = await api.get(`/media?limit=2&cursor=${first.body.nextCursor}`);
    expect([next.body.media.map((m: { id: string }) => m.id), next.body.nextCursor]).toEqual([[ids[0]], null]);

    const del = await api.del(`/media/${ids[1]}`);
    expect([del.status, del.body]).toEqual([200, { success: true, message: 'Media deleted successfully' }]);
    expect(filesOf(org.organizationId).sort()).toEqual([ids[0], ids[2]].sort());
    const gone = v1Error(404, 'Not Found', 'Media not found');
    for (const res of [
      await api.del(`/media/${ids[1]}`),
      await api.get(`/media/${ids[1]}`),
      await api.get(`/media/${ids[1]}/content`),
    ])
      expect([res.status, res.body]).toEqual([404, gone]);
    expect((await api.get('/media')).body.total).toBe(2);
  });

  it('members may read; the uploader and admins may delete, other members get 403', async () => {
    const org = await buildOrg();
    const member = await buildMember(org.organizationId, 'member');
    const admin = await buildMember(org.organizationId, 'admin');
    const id = (await upload(org.apiToken, Buffer.from('hello'), 'a.txt')).body.media.id;
    expect((await v1As(t, member.apiToken).get(`/media/${id}`)).status).toBe(200);
    expect((await v1As(t, member.apiToken).get('/media')).body.total).toBe(1);
    const refused = await v1As(t, member.apiToken).del(`/media/${id}`);
    expect([refused.status, refused.body.message]).toEqual([403, "You don't have permission to access this resource"]);
    const own = (await upload(member.apiToken, Buffer.from('mine'), 'b.txt')).body.media.id;
    expect((await v1As(t, member.apiToken).del(`/media/${own}`)).status).toBe(200);
    expect((await v1As(t, admin.apiToken).del(`/media/${id}`)).status).toBe(200);
  });

  it('another organization gets 404 on every route, and an empty list', async () => {
    const org = await buildOrg();
    const other = await buildOrg();
    const id = (await upload(org.apiToken, await png(), 'red.png')).body.media.id;
    const api = v1As(t, other.apiToken);
    const gone = v1Error(404, 'Not Found', 'Media not found');
    for (const res of [
      await api.get(`/media/${id}`),
      await api.get(`/media/${id}/content`),
      await api.del(`/media/${id}`),
    ])
      expect([res.status, res.body]).toEqual([404, gone]);
    expect((await api.get('/media')).body).toEqual({ success: true, media: [], total: 0, nextCursor: null });
    expect(filesOf(org.organizationId)).toEqual([id]);
  });
});

it('the OpenAPI document has the media routes (a multipart upload); agent-readiness lists the group', async () => {
  const doc = (await t.request.get('/api/openapi.json')).body;
  expect(Object.keys(doc.paths).filter((p) => p.startsWith('/api/v1/media'))).toEqual(
    expect.arrayContaining(['/api/v1/media', '/api/v1/media/{id}', '/api/v1/media/{id}/content'])
  );
  const upload = doc.paths['/api/v1/media'].post;
  expect(upload.requestBody.content['multipart/form-data'].schema).toMatchObject({
    required: ['file'],
    properties: { file: { type: 'string', format: 'binary' } },
  });
  expect(Object.keys(upload.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '413', '415']));
  const execute = doc.paths['/api/v1/agents/{id}/execute'].post;
  expect(execute.requestBody.content['application/json'].schema.properties.mediaIds).toMatchObject({
    type: 'array',
    maxItems: 10,
  });
  const readiness = (await t.request.get('/api/agent-readiness')).body;
  expect(readiness.v1.groups.media).toEqual(
    expect.arrayContaining([{ path: '/api/v1/media', methods: ['POST', 'GET'] }])
  );
});
