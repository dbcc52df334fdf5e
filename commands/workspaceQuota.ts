/**
 * The workspace size cap under concurrency [docs/decisions.md "Workspace caps under concurrency"]: every write of
 * bytes into a workspace (uploads on the current surface, agents' file tools, repository clones, space
 * initialization) first reserves them here, and this is the only place that compares a workspace's usage with
 * WORKSPACE_MAX_BYTES.
 *
 * A reservation takes the next number of its workspace by inserting `<spaceId>:<seq>` (models/WorkspaceReservation.ts),
 * then checks: the bytes on disk (read after the reservations) + every open, unexpired reservation numbered before
 * it + its own bytes ≤ the cap. A reservation inserted later counts this one (open until it ends), so of any set of
 * concurrent writes the admitted ones fit together, on MongoDB and on the embedded database alike (an insert of a
 * unique `_id` is atomic on both; no conditional update is relied on). The writer renews its lease while it writes
 * and closes the reservation after its bytes are in place; a process that dies leaves an open reservation that
 * nobody counts once its lease has passed, and a temporary file that the next check removes.
 */
import { ServiceUnavailableError, StorageLimitError } from '../lib/errors';
import { expiryFields } from '../lib/expiry';
import type { Config } from '../lib/config';
import { LocalDiskStorage, type FileStorage, type WorkspaceRef } from '../lib/fileStorage';
import { WorkspaceReservation, type WorkspaceReservationDoc } from '../models';
import { isDuplicateKey } from '../lib/mongo';

/** What a reservation needs: the storage (its usage), the cap and the lease. */
export interface QuotaDeps {
  storage: FileStorage;
  workspaceMaxBytes: number;
  reservationLeaseMs: number;
}

/** The configuration reservations read. */
export type QuotaConfig = Pick<Config, 'workspacesDir' | 'workspaceMaxBytes' | 'workspaceReservationLeaseMs'>;

/**
 * @param config storage root, cap and lease.
 * @returns the local-disk storage under WORKSPACES_DIR, the cap and the lease.
 */
export function quotaDeps(config: QuotaConfig): QuotaDeps {
  return {
    storage: new LocalDiskStorage(config.workspacesDir),
    workspaceMaxBytes: config.workspaceMaxBytes,
    reservationLeaseMs: config.workspaceReservationLeaseMs,
  };
}

/** Closed reservations are kept this long after their lease (the highest number stays known; then swept). */
const KEPT_MS = 24 * 60 * 60 * 1000;
/** Open reservations read per check; more than this (a storm of dead writers) is refused rather than guessed. */
const OPEN_READ_LIMIT = 1000;
/** Attempts at taking a number (each lost only to a concurrent reservation of the same workspace). */
const NUMBER_ATTEMPTS = 100;

/** Thrown into a write (its signal's reason) whose lease could not be renewed in time: it must not complete (503). */
export class ReservationLapsedError extends ServiceUnavailableError {}

/** An admitted reservation: hold it while writing, then close it. */
export interface WorkspaceReservationHandle {
  /** The bytes it holds. */
  readonly bytes: number;
  /** Aborted when the lease lapsed (the process could not renew it): the write must stop and keep nothing. */
  readonly signal: AbortSignal;
  /** Ends the reservation (the bytes are in place, or the write failed). Never throws. */
  close(): Promise<void>;
}

/** What to reserve. */
export interface ReserveRequest {
  /** Bytes to hold. `undefined`: as many as the workspace has room for, up to `atMost`. */
  bytes?: number;
  /** With `bytes` undefined: the most to hold (the per-file cap). */
  atMost?: number;
  /** Bytes the write frees when it completes (the file it replaces), credited to the room it needs. */
  replaces?: number;
  /** The refusal when the workspace has not enough room (`left` = bytes left); the default names the cap. */
  refusal?: (left: number, cap: number) => Error;
}

const defaultRefusal = (left: number, cap: number): Error =>
  new StorageLimitError(`The workspace would exceed its limit of ${cap} bytes (${left} bytes left)`);

/**
 * Takes the next number of the workspace: one past the highest, by insert (a duplicate means another reservation
 * took it: read again).
 */
async function insertNext(
  ws: WorkspaceRef,
  bytes: number,
  lease: number
): Promise<{ id: string; seq: number; heldUntil: Date } | undefined> {
  for (let attempt = 0; attempt < NUMBER_ATTEMPTS; attempt++) {
    // The lease starts when the reservation is written: attempts lost to concurrent writers do not spend it.
    const heldUntil = new Date(Date.now() + lease);
    const last = await WorkspaceReservation.find({ spaceId: ws.spaceId })
      .sort({ seq: -1 })
      .limit(1)
      .select({ seq: 1 })
      .lean<Array<{ seq: number }>>();
    const seq = (last[0]?.seq ?? 0) + 1;
    const id = `${ws.spaceId}:${seq}`;
    try {
      await WorkspaceReservation.create({
        _id: id,
        organizationId: ws.organizationId,
        spaceId: ws.spaceId,
        seq,
        bytes,
        open: true,
        heldUntil,
        ...expiryFields(new Date(heldUntil.getTime() + KEPT_MS)),
      });
      return { id, seq, heldUntil };
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
    }
  }
  return undefined;
}

/**
 * Reserves bytes of a workspace's cap before writing them.
 * @param deps storage, cap and lease.
 * @param ws the workspace.
 * @param request how many bytes (or as many as there is room for), what the write replaces, the refusal.
 * @returns the reservation, renewed until closed.
 * @throws the refusal (413 by default) when the workspace has not room enough; 503 when no number could be taken.
 */
export async function reserveWorkspaceBytes(
  deps: QuotaDeps,
  ws: WorkspaceRef,
  request: ReserveRequest
): Promise<WorkspaceReservationHandle> {
  const cap = deps.workspaceMaxBytes;
  const wanted = request.bytes ?? Math.min(request.atMost ?? cap, cap);
  const refuse = request.refusal ?? defaultRefusal;
  const lease = deps.reservationLeaseMs;
  const taken = await insertNext(ws, wanted, lease);
  if (!taken) throw new ServiceUnavailableError();
  const { id, seq } = taken;
  let heldUntil = taken.heldUntil;

  // Writes to this reservation run one after the other (the embedded database writes whole documents).
  let writes: Promise<unknown> = Promise.resolve();
  const update = (set: Record<string, unknown>): Promise<void> => {
    const next = writes.then(() => WorkspaceReservation.updateOne({ _id: id }, { $set: set }));
    writes = next.catch(() => undefined);
    return next.then(() => undefined);
  };
  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    clearInterval(renewal);
    clearTimeout(lapse);
    // Left open (the database is unreachable), it stops counting when its lease passes.
    await update({ open: false }).catch(() => undefined);
  };

  const aborter = new AbortController();
  let lapse: NodeJS.Timeout | undefined;
  const armLapse = (): void => {
    clearTimeout(lapse);
    lapse = setTimeout(() => aborter.abort(new ReservationLapsedError()), heldUntil.getTime() - Date.now());
    lapse.unref();
  };
  const renewal = setInterval(
    () => {
      if (closed || aborter.signal.aborted) return;
      // A lease that passed is never renewed: others may have stopped counting it (and may close it).
      if (Date.now() >= heldUntil.getTime()) return aborter.abort(new ReservationLapsedError());
      const until = new Date(Date.now() + lease);
      update({ heldUntil: until, ...expiryFields(new Date(until.getTime() + KEPT_MS)) })
        .then(() => {
          // Renewed before it lapsed (the lapse timer would have aborted it otherwise): it holds until then.
          if (!aborter.signal.aborted) {
            heldUntil = until;
            armLapse();
          }
        })
        .catch(() => undefined); // tried again at the next tick; the lapse timer stops the write if none succeeds
    },
    Math.max(Math.floor(lease / 3), 100)
  );
  renewal.unref();
  armLapse();

  try {
    // The open reservations first, then the disk: a write that ends in between is counted twice (for a moment),
    // never missed.
    const open = await WorkspaceReservation.find({ spaceId: ws.spaceId, open: true })
      .sort({ seq: 1 })
      .limit(OPEN_READ_LIMIT)
      .lean<WorkspaceReservationDoc[]>();
    if (open.length >= OPEN_READ_LIMIT) throw new ServiceUnavailableError();
    const now = Date.now();
    let held = 0;
    for (const r of open) {
      if (r.seq < seq && r.heldUntil.getTime() > now) held += r.bytes;
      // Lapsed for a whole lease more: its process is gone (a live one never renews a lapsed lease). Close it, so
      // the open set stays small.
      else if (r.heldUntil.getTime() < now - lease)
        void WorkspaceReservation.updateOne({ _id: r._id, open: true }, { $set: { open: false } }).catch(
          () => undefined
        );
    }
    const usage = await deps.storage.usage(ws, { staleTemporaryMs: 2 * lease });
    const room = cap - usage.bytes - held + (request.replaces ?? 0);
    const fits = request.bytes === undefined ? room > 0 : request.bytes <= room;
    if (!fits) throw refuse(Math.max(0, room), cap);
    let bytes = wanted;
    if (request.bytes === undefined && room < wanted) {
      bytes = room; // less than asked: holding less never harms the reservations that counted more
      await update({ bytes });
    }
    return { bytes, signal: aborter.signal, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/**
 * Runs a write under a reservation: reserves, runs it with the reservation, closes the reservation when it ends.
 * @param deps storage, cap and lease.
 * @param ws the workspace.
 * @param request what to reserve.
 * @param write the write (its bytes must be in place when it resolves).
 * @returns what the write returns.
 */
export async function withWorkspaceReservation<T>(
  deps: QuotaDeps,
  ws: WorkspaceRef,
  request: ReserveRequest,
  write: (reservation: WorkspaceReservationHandle) => Promise<T>
): Promise<T> {
  const reservation = await reserveWorkspaceBytes(deps, ws, request);
  try {
    return await write(reservation);
  } finally {
    await reservation.close();
  }
}
