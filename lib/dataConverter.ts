/**
 * Private payloads [docs/decisions.md "Observability: private payloads"]: every payload this service hands to
 * Temporal (workflow inputs and results, activity inputs and results, local-activity markers, signals, updates,
 * queries, memos) is sealed with AES-256-GCM under a key derived from ENCRYPTION_KEY, so the
 * engine's database and its Web UI hold no user text in clear. An operator with the key reads them through the codec
 * endpoint (api/codec.ts, Temporal's codec server protocol).
 *
 * Decoding passes a payload that is not sealed through unchanged: histories written before the codec existed (and
 * by a process without ENCRYPTION_KEY in development) still replay.
 */
import { createCipheriv, createDecipheriv, createHash, createSecretKey, hkdfSync, type KeyObject } from 'node:crypto';
import { type DataConverter, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { ClientOptions } from '@temporalio/client';
import type { Context as ActivityContext } from '@temporalio/activity';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { WorkerOptions } from '@temporalio/worker';
import type { Config } from './config';
import { requestIdActivityInterceptors, requestIdClientInterceptor } from './requestContext';
import { pooledRandomBytes } from './randomPool';
import { activeTracing } from './tracing';

/** `metadata.encoding` of a sealed payload (the name the Temporal samples and UI know). */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** `metadata` key naming the key a payload was sealed with (a short hash of it, never the key). */
const KEY_ID_KEY = 'encryption-key-id';
const IV_BYTES = 12;
const TAG_BYTES = 16;

const utf8 = (s: string): Uint8Array => Buffer.from(s, 'utf8');

/**
 * The payload key: HKDF-SHA256 of ENCRYPTION_KEY for this purpose only (the key of secrets at rest is not reused
 * as is), and its id.
 * @param encryptionKey ENCRYPTION_KEY (32 bytes).
 * @returns the derived 32-byte key and its public id.
 */
export function payloadKey(encryptionKey: Buffer): { key: Buffer; id: string } {
  const key = Buffer.from(hkdfSync('sha256', encryptionKey, Buffer.alloc(0), 'aas:temporal-payloads', 32));
  return { key, id: createHash('sha256').update(key).digest('hex').slice(0, 16) };
}

/** AES-256-GCM payload codec: a sealed payload's data is iv | ciphertext | tag of the whole original Payload. */
export class EncryptionCodec implements PayloadCodec {
  /** A KeyObject made once: given a Buffer, every cipher would build one (a profile's 1 % of the api's CPU). */
  private readonly key: KeyObject;
  readonly keyId: string;

  constructor(encryptionKey: Buffer) {
    const { key, id } = payloadKey(encryptionKey);
    this.key = createSecretKey(key);
    this.keyId = id;
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const iv = pooledRandomBytes(IV_BYTES); // an IV never repeats: each is fresh bytes of the CSPRNG
      const cipher = createCipheriv('aes-256-gcm', this.key, iv);
      const clear = temporal.api.common.v1.Payload.encode(payload).finish();
      const sealed = Buffer.concat([iv, cipher.update(clear), cipher.final(), cipher.getAuthTag()]);
      return { metadata: { encoding: utf8(ENCRYPTED_ENCODING), [KEY_ID_KEY]: utf8(this.keyId) }, data: sealed };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const encoding = payload.metadata?.encoding;
      if (!encoding || Buffer.from(encoding).toString('utf8') !== ENCRYPTED_ENCODING) return payload; // clear: as is
      const keyId = payload.metadata?.[KEY_ID_KEY];
      if (keyId && Buffer.from(keyId).toString('utf8') !== this.keyId) {
        throw new Error(
          `payload sealed with another key (id ${Buffer.from(keyId).toString('utf8')}, ours ${this.keyId})`
        );
      }
      const data = Buffer.from(payload.data ?? new Uint8Array());
      if (data.length < IV_BYTES + TAG_BYTES) throw new Error('sealed payload too short');
      const decipher = createDecipheriv('aes-256-gcm', this.key, data.subarray(0, IV_BYTES));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      const clear = Buffer.concat([
        decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)),
        decipher.final(),
      ]);
      return temporal.api.common.v1.Payload.decode(clear);
    });
  }
}

/**
 * The data converter of every Temporal client and worker of the service (and of replays): payloads sealed with
 * ENCRYPTION_KEY. Failure messages stay in clear (they are the service's own words; a failure never quotes user
 * text). Without a key (development without `npm run dev`'s generated one) payloads stay in clear.
 * @param encryptionKey ENCRYPTION_KEY.
 * @returns the data converter.
 */
export function createDataConverter(encryptionKey: Buffer | undefined): DataConverter {
  if (!encryptionKey) return {};
  return { payloadCodecs: [new EncryptionCodec(encryptionKey)] };
}

/** What the Temporal extensions are built from. */
export type TemporalExtensionsConfig = Pick<Config, 'encryptionKey'>;

/**
 * The workflow interceptor modules, bundled with the workflow code (scripts/lib/workflowBundle.ts, or by a worker
 * that bundles the workflows itself): the request id of the work (workflows/interceptors.ts).
 */
export const WORKFLOW_INTERCEPTOR_MODULES: string[] = [require.resolve('../workflows/interceptors')];

/** Where a worker's workflow code comes from: a bundle made by the launcher, else the sources. */
export type WorkflowSource = { codePath: string } | { code: string } | undefined;

/** The data converter and interceptors of every Temporal client and worker of the service. */
export interface TemporalExtensions {
  /** For `new Client(...)` and `Worker.runReplayHistory(...)`. */
  dataConverter: DataConverter;
  /** Spread into `new Client(...)`. */
  client: Pick<ClientOptions, 'dataConverter' | 'interceptors'>;
  /**
   * @param source the workflow bundle, or undefined to bundle the sources.
   * @returns what to spread into `Worker.create(...)`: the workflow code, the data converter and the interceptors.
   */
  worker(
    source: WorkflowSource
  ): Pick<WorkerOptions, 'dataConverter' | 'interceptors' | 'sinks' | 'workflowBundle' | 'workflowsPath'>;
}

/**
 * The ONE place the data converter and the interceptors of every Temporal client and worker are built: the api's
 * client, each worker (the worker-only process, a worker inside the api process, the tests' workers) and replays
 * use what this returns, so whatever one of them seals the others can open, and every one carries the request id.
 * @param config ENCRYPTION_KEY.
 * @returns the options to spread into the client's and the worker's.
 */
export function temporalExtensions(config: TemporalExtensionsConfig): TemporalExtensions {
  const dataConverter = createDataConverter(config.encryptionKey);
  // Traces (lib/tracing.ts): the Temporal interceptors join the request's trace when tracing is on.
  const tracing = activeTracing();
  return {
    dataConverter,
    client: {
      dataConverter,
      interceptors: {
        workflow: [requestIdClientInterceptor, ...(tracing ? [new OpenTelemetryWorkflowClientInterceptor()] : [])],
      },
    },
    worker: (source) => ({
      dataConverter,
      // The workflows' spans leave the sandbox through this sink; a worker with tracing off drops them.
      sinks: {
        exporter: tracing
          ? makeWorkflowExporter(tracing.spanProcessor, tracing.resource)
          : { export: { fn: () => undefined } },
      },
      ...(source ? { workflowBundle: source } : { workflowsPath: require.resolve('../workflows') }),
      interceptors: {
        activity: [
          requestIdActivityInterceptors,
          ...(tracing
            ? [
                (ctx: ActivityContext) => ({
                  inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
                  outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
                }),
              ]
            : []),
        ],
        // A bundle already holds them (the SDK warns when they are given beside one).
        ...(source ? {} : { workflowModules: WORKFLOW_INTERCEPTOR_MODULES }),
      },
    }),
  };
}
