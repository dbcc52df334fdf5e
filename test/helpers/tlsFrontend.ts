/**
 * A TLS frontend for the plaintext Temporal dev server, made in the test (the dev server has no TLS of its own):
 * an HTTP/2 server over TLS (ALPN `h2`, optionally requiring a client certificate from a given CA) that forwards
 * every gRPC call to the dev server over plaintext HTTP/2, headers, body and trailers, as a TLS-terminating proxy in
 * front of a Temporal cluster would. It records what each call carried (the authorization header, whether the client
 * certificate was verified), so a test can see what reached the engine.
 */
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';

export interface TlsFrontend {
  /** `127.0.0.1:<port>` */
  address: string;
  /** One entry per forwarded call. */
  calls: Array<{ path: string; authorization?: string; clientCertificate: boolean }>;
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set([':method', ':path', ':scheme', ':authority', ':status', 'connection', 'host']);

/**
 * @param options the server's certificate and key; `clientCa`: require a client certificate signed by it (mTLS).
 * @param upstream the plaintext frontend (`host:port`).
 * @returns the running frontend.
 */
export async function startTlsFrontend(
  options: { cert: Buffer; key: Buffer; clientCa?: Buffer },
  upstream: string
): Promise<TlsFrontend> {
  const target = http2.connect(`http://${upstream}`);
  target.on('error', () => undefined);
  const calls: TlsFrontend['calls'] = [];
  const server = http2.createSecureServer({
    cert: options.cert,
    key: options.key,
    ALPNProtocols: ['h2'],
    ...(options.clientCa ? { ca: options.clientCa, requestCert: true, rejectUnauthorized: true } : {}),
  });
  server.on('stream', (stream, headers) => {
    const socket = stream.session?.socket as TLSSocket | undefined;
    calls.push({
      path: String(headers[':path']),
      authorization: headers.authorization as string | undefined,
      clientCertificate: socket?.authorized === true && Boolean(socket.getPeerCertificate()?.subject),
    });
    const forwarded: http2.OutgoingHttpHeaders = {
      ':method': headers[':method'],
      ':path': headers[':path'],
    };
    for (const [name, value] of Object.entries(headers)) if (!HOP_BY_HOP.has(name)) forwarded[name] = value;
    const call = target.request(forwarded, { endStream: false });
    let trailers: http2.OutgoingHttpHeaders | undefined;
    call.on('response', (answer) => {
      const head: http2.OutgoingHttpHeaders = { ':status': answer[':status'] };
      for (const [name, value] of Object.entries(answer)) if (!HOP_BY_HOP.has(name)) head[name] = value;
      if (stream.destroyed) return;
      // A trailers-only answer (an error) stays one frame; any other answer gets its trailers after the body.
      if ('grpc-status' in answer) stream.respond(head, { endStream: true });
      else stream.respond(head, { waitForTrailers: true });
    });
    call.on('trailers', (t) => (trailers = { ...t }));
    stream.on('wantTrailers', () => stream.sendTrailers(trailers ?? {}));
    call.on('data', (chunk: Buffer) => !stream.destroyed && stream.write(chunk));
    call.on('end', () => !stream.destroyed && !stream.closed && stream.end());
    call.on('error', () => stream.destroy());
    stream.on('data', (chunk: Buffer) => call.write(chunk));
    stream.on('end', () => call.end());
    stream.on('close', () => !call.closed && call.close(http2.constants.NGHTTP2_CANCEL));
    stream.on('error', () => call.close(http2.constants.NGHTTP2_CANCEL));
  });
  server.on('sessionError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: async () => {
      for (const s of sessions) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      target.close();
    },
  };
}
