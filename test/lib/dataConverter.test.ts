/**
 * The payload codec (lib/dataConverter.ts): seals with AES-256-GCM under a key derived from ENCRYPTION_KEY, opens
 * what it sealed, passes clear payloads through (histories from before it), refuses another key's and tampered ones.
 */
import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import { createDataConverter, EncryptionCodec, payloadKey } from '../../lib/dataConverter';

const key = randomBytes(32);

it('seals a payload so its text is gone, and opens it again', async () => {
  const codec = new EncryptionCodec(key);
  const clear = defaultPayloadConverter.toPayload({ message: 'a private message' })!;
  const [sealed] = await codec.encode([clear]);
  expect(Buffer.from(sealed.metadata!.encoding!).toString()).toBe('binary/encrypted');
  expect(Buffer.from(sealed.data!).includes(Buffer.from('private'))).toBe(false);
  const [opened] = await codec.decode([sealed]);
  expect(defaultPayloadConverter.fromPayload(opened)).toEqual({ message: 'a private message' });
  // Two seals of the same payload differ (a fresh IV each time).
  const [again] = await codec.encode([clear]);
  expect(Buffer.from(again.data!).equals(Buffer.from(sealed.data!))).toBe(false);
});

it('passes a clear payload through (a history written before the codec) and refuses another key or a tamper', async () => {
  const codec = new EncryptionCodec(key);
  const clear = defaultPayloadConverter.toPayload('written before')!;
  expect(await codec.decode([clear])).toEqual([clear]);
  const [sealed] = await new EncryptionCodec(randomBytes(32)).encode([clear]);
  await expect(codec.decode([sealed])).rejects.toThrow(/another key/);
  const [mine] = await codec.encode([clear]);
  const data = Buffer.from(mine.data!);
  data[20] ^= 1;
  await expect(codec.decode([{ ...mine, data }])).rejects.toThrow();
});

it('derives its own key from ENCRYPTION_KEY (not the key of secrets at rest) and has no codec without a key', () => {
  const { key: derived, id } = payloadKey(key);
  expect(derived.equals(key)).toBe(false);
  expect(derived).toHaveLength(32);
  expect(id).toMatch(/^[0-9a-f]{16}$/);
  expect(createDataConverter(undefined).payloadCodecs).toBeUndefined();
  expect(createDataConverter(key).payloadCodecs).toHaveLength(1);
});
