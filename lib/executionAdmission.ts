/**
 * Admission of executions (docs/decisions.md "Overload: admission of executions (issue 24 point 5)"): a bound on the
 * executions a process has started and not yet seen end (EXECUTION_CONCURRENCY), with a line of requests waiting for a
 * slot (EXECUTION_QUEUE long, each waiting at most EXECUTION_QUEUE_WAIT_MS), first come first served within an
 * organization and fair between organizations (lib/fairLine.ts: a free slot goes to the organization with work
 * waiting that runs the fewest for its weight; a full line gives the place of the largest organization's newest
 * request to a newcomer of an organization with fewer waiting). A request
 * that finds the line full, or whose wait runs out, is answered 503 with `Retry-After`; under any load the process
 * works on a bounded number of executions, each on the fast path (an eager start into a free workflow task slot of
 * its own worker), and the rest wait at no cost.
 *
 * A slot is taken by the api before any of the execution's work (commands/executionStart.ts `startExecution`, the one
 * place every surface starts an execution), named after the execution once its id exists, and given back:
 *
 * - when the execution's finish runs in this process ({@link executionEnded}, called by the finish activity);
 * - when the request that started it sees it end (a JSON answer, a stream's terminal event: api/executionReply.ts),
 *   wherever it ran;
 * - when the start fails (the caller releases it);
 * - for an execution that runs in another process (an eager start refused, a workflow task taken over): by a sweep
 *   that reads the execution's status by id, first 5 s after admission and then at growing intervals, skipping the
 *   executions whose reply runs here (lib/runningCalls.ts);
 * - at the latest after `holdMs` (the execution deadline and a margin), whatever happened to it.
 *
 * A process that crashes loses its slots with it; a client that goes away while waiting leaves the line.
 *
 * An execution that waits for a concurrency key (docs/fairness.md "Concurrency keys") gives its slot back while it
 * waits, and takes one again through the same fair line once it holds its keys ({@link executionQueued},
 * {@link readmitQueued}, called by its claim: activities/executionConcurrency.ts). The request that started it sees
 * its `queued` event and gives the slot back too when the claim ran in another process (api/executionReply.ts), and
 * the sweep reads `queued` as no longer needing one.
 *
 * A sub-agent's child execution takes a slot of its own too ({@link admitChild}; issue 38), started by the worker
 * part of the process, and never waits for one: no free slot refuses the delegation (an error result for the model).
 */
import { OverloadedError, RequestAbortedError, ServiceUnavailableError } from './errors';
import { FairLine } from './fairLine';
import {
  admissionLargestLine,
  admissionReleases,
  admissionOrganizationsWaiting,
  executionAdmissionWait,
  executionsAdmitted,
  executionsRefused,
  executionsWaiting,
} from './metrics';
import { outsideRequestDeadline } from './requestDeadline';
import { runsHere } from './runningCalls';

export interface AdmissionLimits {
  /** Executions admitted at once (EXECUTION_CONCURRENCY). */
  concurrency: number;
  /** Requests that may wait in line for a slot (EXECUTION_QUEUE); past it, 503 at once. */
  queue: number;
  /** Longest wait in line (EXECUTION_QUEUE_WAIT_MS); past it, 503. */
  waitMs: number;
  /** A slot is given back at the latest this long after it was taken. */
  holdMs: number;
  /**
   * Slots kept for the organizations under their share while several are active (hold or wait for slots here): an
   * organization holding its equal share or more takes none of the last `headroom` free slots, so a request of
   * another organization finds one free instead of waiting for the next slot to come back. Default 0 (none).
   */
  headroom?: number;
}

/**
 * Reads which of the given executions have ended (a terminal status, or no record).
 * @param executionIds executions admitted here that do not run here.
 * @returns the ones that ended.
 */
export type EndedCheck = (executionIds: string[]) => Promise<string[]>;

/** A slot taken for one execution. */
export interface AdmissionSlot {
  /** Names the execution: from now on its end releases the slot ({@link executionEnded}). */
  bind(executionId: string): void;
  /**
   * Gives the slot back (idempotent).
   * @param by what gave it back (aas_admission_releases_total's label); the caller's own release by default.
   */
  release(by?: ReleasePath): void;
}

/**
 * What gave a slot back: the execution's finish in this process, the request that started it seeing its end, the
 * sweep's read of its status, its hold time running out, the caller (a failed start, a refused delegation), or the
 * process closing.
 */
export type ReleasePath = 'finish' | 'reply' | 'sweep' | 'hold' | 'caller' | 'queued';

/** Longest wait of a queued execution's re-admission in line; past it, it takes a slot over the bound (below the
 * claim's 30 s start-to-close timeout, so that the claim ends). */
const READMIT_WAIT_MS = 20_000;
/** Pause before a re-admission refused by a full line joins it again. */
const READMIT_RETRY_MS = 250;

/** First status read of a slot whose execution does not run here, after its admission. */
const FIRST_CHECK_MS = 5000;
/** Longest interval between two status reads of one slot. */
const MAX_CHECK_INTERVAL_MS = 10_000;
/** How often the sweep looks at the slots. */
const SWEEP_MS = 1000;
/** Bounds of `Retry-After`, in seconds. */
const RETRY_AFTER_MIN_S = 1;
const RETRY_AFTER_MAX_S = 60;

class Slot implements AdmissionSlot {
  executionId: string | undefined;
  released = false;
  /** Taken again by a queued execution that now holds its keys: a late `queued` event does not give it back. */
  readmitted = false;
  readonly since = Date.now();
  checkAt = this.since + FIRST_CHECK_MS;
  checkEveryMs = FIRST_CHECK_MS;

  constructor(
    private readonly owner: ExecutionAdmission,
    readonly organizationId: string
  ) {}

  bind(executionId: string): void {
    if (this.released) return;
    this.executionId = executionId;
    this.owner.named(this);
  }

  release(by: ReleasePath = 'caller'): void {
    if (this.released) return;
    this.released = true;
    admissionReleases.inc({ by });
    this.owner.freed(this);
  }
}

interface Waiter {
  organizationId: string;
  weight: number;
  admit(slot: Slot): void;
  fail(err: Error): void;
  queuedAt: number;
}

/** Every live admission of the process (tests run several apps in one process). */
const live = new Set<ExecutionAdmission>();

function publish(): void {
  let admitted = 0;
  let waiting = 0;
  let organizations = 0;
  let largest = 0;
  for (const a of live) {
    admitted += a.admitted;
    waiting += a.waiting;
    organizations += a.organizationsWaiting;
    largest = Math.max(largest, a.largestLine);
  }
  executionsAdmitted.set(admitted);
  executionsWaiting.set(waiting);
  admissionOrganizationsWaiting.set(organizations);
  admissionLargestLine.set(largest);
}

/**
 * Tells this process's admissions that an execution ended (its finish ran here): its slot, if it holds one, is free.
 * @param executionId the execution.
 */
export function executionEnded(executionId: string): void {
  for (const a of live) a.releaseExecution(executionId, 'finish');
}

/**
 * Tells this process's admissions that an execution waits for a concurrency key: the slot it took to start, if this
 * process holds it, is given back while it waits ({@link readmitQueued} takes one again). A slot it took again
 * after waiting is kept (a late `queued` event read by its stream).
 * @param executionId the execution.
 */
export function executionQueued(executionId: string): void {
  for (const a of live) a.releaseQueued(executionId);
}

/** Re-admissions waiting in this process, by execution: a retried claim keeps the first one's place in line. */
const readmissions = new Map<string, Promise<void>>();

/**
 * Takes a slot again for a queued execution that now holds its keys, through the same fair line as new requests
 * (its organization's line and share), in the process that runs its workflow. It is not refused: a full line or a
 * wait past READMIT_WAIT_MS ends with a slot taken over the bound (the execution is accepted and holds its keys).
 * @param executionId the execution.
 * @param organizationId its organization.
 * @param boundMs the longest wait in line.
 * @returns resolves once it holds a slot here; at once in a process that admits nothing (a worker-only process), or
 *   when this process already holds one for it (a retried claim).
 */
export function readmitQueued(executionId: string, organizationId: string, boundMs = READMIT_WAIT_MS): Promise<void> {
  const [admission] = live;
  if (!admission) return Promise.resolve();
  for (const a of live) if (a.holds(executionId)) return Promise.resolve();
  let pending = readmissions.get(executionId);
  if (!pending) {
    pending = admission.readmit(executionId, organizationId, boundMs).finally(() => readmissions.delete(executionId));
    readmissions.set(executionId, pending);
  }
  return pending;
}

/**
 * Admits a sub-agent's child execution in this process without waiting [docs/decisions.md "Sub-agents count against
 * admission"]: the first admission of the process with a free slot and nobody in line takes one, named after the
 * child (its end gives it back, as any execution's). A parent holds its own slot while it waits for its children,
 * so a child that waited could wait for slots that only parents waiting for children hold: it is refused instead.
 * @param executionId the child's id.
 * @param organizationId its organization (its slot counts in the organization's share).
 * @returns the slot; null when this process admits executions and has no free slot (refuse the delegation);
 *   undefined when it admits none (a worker-only process, which takes no requests).
 */
export function admitChild(executionId: string, organizationId = ''): AdmissionSlot | null | undefined {
  if (live.size === 0) return undefined;
  for (const a of live) {
    const slot = a.tryAcquire(organizationId);
    if (slot) {
      slot.bind(executionId);
      return slot;
    }
  }
  executionsRefused.inc({ reason: 'subagent' });
  return null;
}

/** The admission of one api process (created with the app: api/app.ts). */
export class ExecutionAdmission {
  private readonly slots = new Set<Slot>();
  private readonly byExecution = new Map<string, Slot>();
  private readonly line = new FairLine<Waiter>();
  /** Slots taken per organization (the fair choice's `running`). */
  private readonly running = new Map<string, number>();
  /** Recent time a slot is held (moving average), for `Retry-After`. */
  private holdAverageMs = 1000;
  private timer: NodeJS.Timeout | undefined;
  private sweeping = false;
  private closed = false;

  /**
   * @param limits the bounds.
   * @param ended reads which executions ended (the sweep, for executions that run elsewhere).
   * @param onError told when the sweep cannot read.
   * @param weightOf an organization's weight (Organization.fairnessWeight), read only for a request that must wait.
   */
  constructor(
    readonly limits: AdmissionLimits,
    private readonly ended: EndedCheck,
    private readonly onError: (err: unknown) => void = () => undefined,
    private readonly weightOf: (organizationId: string) => number | Promise<number> = () => 1
  ) {
    live.add(this);
  }

  /** Slots taken. */
  get admitted(): number {
    return this.slots.size;
  }

  /** Requests in line. */
  get waiting(): number {
    return this.line.size;
  }

  /** Organizations with requests in line. */
  get organizationsWaiting(): number {
    return this.line.organizations;
  }

  /** The most requests one organization has in line. */
  get largestLine(): number {
    return this.line.largest;
  }

  /**
   * @param organizationId an organization.
   * @returns the slots it holds here.
   */
  runningOf(organizationId: string): number {
    return this.running.get(organizationId) ?? 0;
  }

  /**
   * Takes a slot, waiting in line for one when none is free (the request's deadline is paused meanwhile: the wait
   * has its own bound).
   * @param gone aborted when the client goes away: it leaves the line.
   * @param organizationId the caller's organization (its line; '' when unknown: one shared line).
   * @returns the slot.
   * @throws OverloadedError (503 + Retry-After) when the line is full or the wait ran out.
   */
  acquire(gone?: AbortSignal, organizationId = ''): Promise<AdmissionSlot> {
    try {
      const free = this.freeSlot(organizationId);
      if (free) return Promise.resolve(free);
      // The weight matters only in line: read then (a cached read), never on the way of a request with a free slot.
      const weight = this.weightOf(organizationId);
      if (typeof weight === 'number') return this.wait(gone, organizationId, weight);
      return weight.then((w) => this.freeSlot(organizationId) ?? this.wait(gone, organizationId, w));
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  private freeSlot(organizationId: string): Slot | undefined {
    if (this.closed) throw new ServiceUnavailableError();
    // A free slot, and nobody of its organization in line before it (the others in line, if any, may not take it:
    // they hold their share and it is the headroom's).
    if (this.line.waitingOf(organizationId) === 0 && this.mayTake(organizationId)) {
      executionAdmissionWait.observe(0);
      return this.take(organizationId);
    }
    return undefined;
  }

  private wait(gone: AbortSignal | undefined, organizationId: string, weight: number): Promise<AdmissionSlot> {
    if (this.line.size >= this.limits.queue) {
      // A full line: the largest organization's newest request gives its place up, when that evens the shares.
      const evicted = this.line.evictionFor(organizationId);
      if (!evicted) return Promise.reject(this.refuse('queue_full'));
      evicted.fail(this.refuse('fair_share'));
    }
    if (gone?.aborted) return Promise.reject(new RequestAbortedError());
    return outsideRequestDeadline(
      () =>
        new Promise<AdmissionSlot>((resolve, reject) => {
          const leave = (): void => {
            clearTimeout(timer);
            gone?.removeEventListener('abort', onGone);
            this.line.remove(waiter);
            publish();
          };
          const onGone = (): void => {
            leave();
            reject(new RequestAbortedError());
          };
          const timer = setTimeout(() => {
            leave();
            reject(this.refuse('wait_timeout'));
          }, this.limits.waitMs);
          const waiter: Waiter = {
            organizationId,
            weight,
            queuedAt: Date.now(),
            admit: (slot) => {
              leave();
              executionAdmissionWait.observe((Date.now() - waiter.queuedAt) / 1000);
              resolve(slot);
            },
            fail: (err) => {
              leave();
              reject(err);
            },
          };
          gone?.addEventListener('abort', onGone, { once: true });
          this.line.push(waiter);
          publish();
        })
    );
  }

  /**
   * @param organizationId the organization the slot counts for.
   * @returns a free slot at once, or undefined when none is free or requests wait in line (they come first).
   */
  tryAcquire(organizationId = ''): AdmissionSlot | undefined {
    if (this.closed || this.slots.size >= this.limits.concurrency || this.line.size > 0) return undefined;
    return this.take(organizationId);
  }

  /**
   * @param executionId an execution.
   * @returns whether it holds a slot here.
   */
  holds(executionId: string): boolean {
    return this.byExecution.has(executionId);
  }

  /**
   * Gives back the slot an execution took to start, now that it waits for a concurrency key (not one it took again
   * after waiting).
   * @param executionId the execution.
   */
  releaseQueued(executionId: string): void {
    const slot = this.byExecution.get(executionId);
    if (slot && !slot.readmitted) slot.release('queued');
  }

  /**
   * {@link readmitQueued}'s wait: in line as a request of its organization, again after a full line refused it, and
   * past `boundMs` a slot over the bound.
   * @param executionId the execution.
   * @param organizationId its organization.
   * @param boundMs the longest wait.
   */
  async readmit(executionId: string, organizationId: string, boundMs: number): Promise<void> {
    const until = Date.now() + boundMs;
    for (let left = boundMs; left > 0 && !this.closed; left = until - Date.now()) {
      try {
        const slot = (await this.acquire(AbortSignal.timeout(left), organizationId)) as Slot;
        slot.readmitted = true;
        slot.bind(executionId);
        return;
      } catch (err) {
        if (err instanceof RequestAbortedError || err instanceof ServiceUnavailableError) break;
        if (!(err instanceof OverloadedError)) throw err;
        await new Promise((r) => setTimeout(r, Math.min(READMIT_RETRY_MS, Math.max(0, until - Date.now()))));
      }
    }
    if (this.closed) return;
    const slot = this.take(organizationId);
    slot.readmitted = true;
    slot.bind(executionId);
  }

  /**
   * Frees the slot of an execution admitted here, if it holds one.
   * @param executionId the execution.
   * @param by what saw it end (the request that started it, by default).
   */
  releaseExecution(executionId: string, by: ReleasePath = 'reply'): void {
    this.byExecution.get(executionId)?.release(by);
  }

  /** Stops (process shutdown): the requests in line get 503, the sweep ends. */
  close(): void {
    this.closed = true;
    live.delete(this);
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (const waiter of this.line.all()) waiter.fail(new ServiceUnavailableError());
    publish();
  }

  /** @internal a slot was named after its execution. */
  named(slot: Slot): void {
    this.byExecution.set(slot.executionId!, slot);
  }

  /** @internal a slot was given back: the request the fair line chooses takes it. */
  freed(slot: Slot): void {
    if (!this.slots.delete(slot)) return;
    const held = this.runningOf(slot.organizationId) - 1;
    if (held > 0) this.running.set(slot.organizationId, held);
    else this.running.delete(slot.organizationId);
    if (slot.executionId !== undefined && this.byExecution.get(slot.executionId) === slot)
      this.byExecution.delete(slot.executionId);
    this.holdAverageMs = 0.9 * this.holdAverageMs + 0.1 * (Date.now() - slot.since);
    // The request the fair line chooses takes it (and more: an organization that holds nothing more now leaves the
    // others a larger share, and the headroom to them).
    for (let next = this.peekNext(); next && !this.closed; next = this.peekNext())
      next.admit(this.take(next.organizationId));
    publish();
  }

  /** @returns the request in line a free slot goes to now, or undefined (none, or the free slots are headroom). */
  private peekNext(): Waiter | undefined {
    const next = this.line.peek((org) => this.runningOf(org));
    return next && this.mayTake(next.organizationId) ? next : undefined;
  }

  /**
   * @param organizationId an organization.
   * @returns whether it may take a free slot now: any one outside the headroom; one of the last `headroom` only while
   *   it holds fewer than its equal share among the organizations active here (holding or waiting for a slot).
   */
  private mayTake(organizationId: string): boolean {
    const taken = this.slots.size;
    const { concurrency, headroom = 0 } = this.limits;
    if (taken >= concurrency) return false;
    if (taken < concurrency - headroom) return true;
    const active = new Set([organizationId, ...this.running.keys(), ...this.line.organizationIds()]);
    return this.runningOf(organizationId) * active.size < concurrency;
  }

  private take(organizationId: string): Slot {
    const slot = new Slot(this, organizationId);
    this.slots.add(slot);
    this.running.set(organizationId, this.runningOf(organizationId) + 1);
    this.schedule();
    publish();
    return slot;
  }

  private refuse(reason: 'queue_full' | 'wait_timeout' | 'fair_share'): OverloadedError {
    executionsRefused.inc({ reason });
    // When a slot is likely free for a request that joins the back of the line now.
    const seconds = ((this.line.size + 1) * this.holdAverageMs) / this.limits.concurrency / 1000;
    return new OverloadedError(Math.min(RETRY_AFTER_MAX_S, Math.max(RETRY_AFTER_MIN_S, Math.ceil(seconds))));
  }

  private schedule(): void {
    if (this.timer || this.closed || this.slots.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.sweep();
    }, SWEEP_MS);
    this.timer.unref();
  }

  /** Frees the slots of executions that ended elsewhere, and of those held past `holdMs`. */
  private async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      const now = Date.now();
      const ask: Slot[] = [];
      for (const slot of [...this.slots]) {
        if (now - slot.since > this.limits.holdMs) slot.release('hold');
        else if (slot.executionId !== undefined && now >= slot.checkAt && !runsHere(slot.executionId)) {
          slot.checkEveryMs = Math.min(MAX_CHECK_INTERVAL_MS, slot.checkEveryMs * 2);
          slot.checkAt = now + slot.checkEveryMs;
          ask.push(slot);
        }
      }
      if (ask.length > 0) {
        const ended = new Set(await this.ended(ask.map((s) => s.executionId!)));
        for (const slot of ask) if (ended.has(slot.executionId!)) slot.release('sweep');
      }
    } catch (err) {
      this.onError(err);
    } finally {
      this.sweeping = false;
      this.schedule();
    }
  }
}
