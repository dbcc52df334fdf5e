/**
 * The current surface's request budget (docs/decisions.md "Rate limit"): fixed windows per identity (a user in an
 * organization), counted in MongoDB so every api instance shares them; one `_id`-keyed upsert per request.
 */
import { expiryFields } from '../lib/expiry';
import { NotFoundError } from '../lib/errors';
import { authChanged } from './tokens';
import { Membership, RateWindow, type RateWindowDoc } from '../models';
import { isDuplicateKey } from '../lib/mongo';

/** One counted request. */
export interface WindowCount {
  /** Requests in the window so far, this one included. */
  count: number;
  /** When the window ends (ms since the epoch). */
  resetAt: number;
}

interface Waiter {
  /** How many requests it counts for (an MCP batch: one per JSON-RPC message). */
  weight: number;
  resolve: (count: number) => void;
  reject: (err: unknown) => void;
}

/** What this process counted and the upserts it took (the benchmark reports round trips per request). */
export const limiterStats = { requests: 0, upserts: 0 };

/** Per window document: requests waiting to be counted while an upsert for that document is in flight. */
const queues = new Map<string, Waiter[]>();

async function incrementWindow(id: string, by: number, expiresAt: Date): Promise<number> {
  const upsert = (): Promise<RateWindowDoc | null> => {
    limiterStats.upserts++;
    return RateWindow.findOneAndUpdate(
      { _id: id },
      { $inc: { count: by }, $setOnInsert: expiryFields(expiresAt) },
      { upsert: true, new: true }
    ).lean<RateWindowDoc>();
  };
  try {
    return (await upsert())?.count ?? by;
  } catch (err) {
    // Two first requests of a window raced to insert it: the loser's retry increments the winner's document.
    if (!isDuplicateKey(err)) throw err;
    return (await upsert())?.count ?? by;
  }
}

/** Counts every queued request of a window document in one upsert at a time, until its queue is empty. */
async function drain(id: string, expiresAt: Date): Promise<void> {
  for (;;) {
    const waiting = queues.get(id)!;
    if (waiting.length === 0) {
      queues.delete(id);
      return;
    }
    queues.set(id, []);
    try {
      const by = waiting.reduce((n, w) => n + w.weight, 0);
      const total = await incrementWindow(id, by, expiresAt);
      let before = total - by;
      for (const w of waiting) w.resolve((before += w.weight));
    } catch (err) {
      waiting.forEach((w) => w.reject(err));
    }
  }
}

/**
 * Counts a request of an identity in the current window. The requests one process receives for one window
 * meanwhile are counted together by the next upsert (`$inc` by their number), so a burst costs one round trip per
 * upsert in flight rather than per request (docs/decisions.md "Rate limit"; the embedded database's updates are atomic
 * since "Atomic updates on the embedded database").
 * @param identity `<organizationId>:<userId>`.
 * @param windowSeconds window length.
 * @param now the current time (ms).
 * @param weight how many requests this one counts for (an MCP batch: its messages; docs/decisions.md "Security
 *   (issue 30)").
 * @returns the count (this request's last one included) and the end of the window.
 */
export async function countRequest(
  identity: string,
  windowSeconds: number,
  now = Date.now(),
  weight = 1
): Promise<WindowCount> {
  const windowMs = windowSeconds * 1000;
  const start = Math.floor(now / windowMs) * windowMs;
  const resetAt = start + windowMs;
  const id = `${identity}:${start}`;
  limiterStats.requests += weight;
  const count = await new Promise<number>((resolve, reject) => {
    const waiting = queues.get(id);
    if (waiting) {
      waiting.push({ weight, resolve, reject });
      return;
    }
    queues.set(id, [{ weight, resolve, reject }]);
    void drain(id, new Date(resetAt));
  });
  return { count, resetAt };
}

/**
 * Sets (or, with null, clears) an identity's own limit (admin CLI).
 * @param organizationId the organization.
 * @param userId the member.
 * @param limit requests per window, or null for the configured default.
 */
export async function setRateLimit(organizationId: string, userId: string, limit: number | null): Promise<void> {
  const res = await Membership.updateOne({ organizationId, userId }, { $set: { rateLimit: limit } });
  if (res.matchedCount === 0) throw new NotFoundError('User is not a member of this organization');
  await authChanged(organizationId);
}
