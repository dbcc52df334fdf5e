/**
 * Reading one file from a `multipart/form-data` request body, streamed (`@fastify/busboy`) [docs/decisions.md
 * "Media"]: the body holds exactly one part, a file part of the expected name; its bytes go to a consumer as they
 * arrive, never buffered here. Anything else is 400 once the body has been read; a consumer failure (a cap
 * reached) is thrown once the body has been read to its end, so the client gets its answer.
 */
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { Busboy, type BusboyHeaders, type BusboyInstance } from '@fastify/busboy';
import { UnsupportedMediaTypeError, ValidationError } from '../lib/errors';

/** What the client said about the file part. */
export interface FilePart {
  /** The part's filename (its last path segment). */
  filename: string;
  /** The part's Content-Type (`text/plain` when it sent none, as RFC 7578 says). */
  mimeType: string;
}

/**
 * @param req the request.
 * @param field the name of the one file part.
 * @param consume reads the part's bytes (it must read them to their end or fail).
 * @param discard undoes what `consume` kept, when the body turns out not to be acceptable after all.
 * @returns what `consume` returned, with what the client said about the file.
 * @throws UnsupportedMediaTypeError (415) for a body that is not multipart/form-data; ValidationError for a malformed body, a missing
 * file part, or other parts; whatever `consume` threw.
 */
export async function readFilePart<T>(
  req: IncomingMessage,
  field: string,
  consume: (file: Readable) => Promise<T>,
  discard: (kept: T) => Promise<void>
): Promise<{ part: FilePart; result: T }> {
  const type = req.headers['content-type'] ?? '';
  if (!/^multipart\/form-data\s*(;|$)/i.test(type))
    throw new UnsupportedMediaTypeError(`Content-Type must be multipart/form-data with a file part named ${field}`);
  let parser: BusboyInstance;
  try {
    parser = Busboy({ headers: req.headers as BusboyHeaders, limits: { files: 1, parts: 1 } });
  } catch (err) {
    throw new ValidationError(`Invalid multipart body: ${(err as Error).message}`);
  }
  const onePart = `Send one part: a file named ${field}`;
  return new Promise((resolve, reject) => {
    let problem: Error | undefined;
    let work: Promise<{ part: FilePart; result: T }> | undefined;
    let current: Readable | undefined;
    let settled = false;
    const fail = (err: Error): void => {
      if (settled) return;
      settled = true;
      req.unpipe(parser);
      req.resume();
      // The consumer's own work ends first (a received file removed), then the request fails.
      void (work ? work.then((done) => discard(done.result)) : Promise.resolve())
        .catch(() => undefined)
        .finally(() => reject(err));
    };
    parser.on('file', (name, stream, filename, _encoding, mimeType) => {
      if (name !== field) {
        problem ??= new ValidationError(`Unexpected part ${name}: ${onePart}`);
        stream.resume();
        return;
      }
      current = stream;
      // The parser errors the part of a malformed body (and the consumer sees it); later emissions are expected.
      stream.on('error', () => undefined);
      work = consume(stream).then((result) => ({ part: { filename, mimeType }, result }));
      work.catch(() => undefined); // awaited at the end of the body
    });
    parser.on('field', (name: string) => {
      problem ??= new ValidationError(
        name === field
          ? `The part ${field} has no filename: send it as a file (${onePart})`
          : `Unexpected field ${name}: ${onePart}`
      );
    });
    for (const limit of ['partsLimit', 'filesLimit'])
      parser.on(limit, () => {
        problem ??= new ValidationError(`Too many parts: ${onePart}`);
      });
    // A malformed body: the parser errors the part it was in too, so the consumer fails on its own.
    parser.on('error', (err: Error) => fail(new ValidationError(`Invalid multipart body: ${err.message}`)));
    parser.on('finish', () => {
      if (settled) return;
      if (!work) {
        fail(problem ?? new ValidationError(`Missing required field: ${field} (a file part)`));
        return;
      }
      work.then(
        (done) => {
          if (problem) return fail(problem);
          settled = true;
          resolve(done);
        },
        (err: Error) => {
          settled = true;
          reject(err);
        }
      );
    });
    req.once('close', () => {
      if (req.complete || settled) return;
      const cut = new ValidationError('The request body was cut short');
      current?.destroy(cut);
      fail(cut);
    });
    req.pipe(parser);
  });
}
