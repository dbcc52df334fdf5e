/**
 * The line of execution requests waiting for an admission slot, fair between organizations (issue 39 point 3;
 * docs/decisions.md "Fair admission between organizations"): one first-come first-served line per organization, and
 * a free slot goes to the organization with work waiting that holds the fewest running slots for its weight
 * (`running / weight`; a tie goes to the oldest request). An organization with nothing running is served before any
 * organization that has some, so one organization's burst cannot hold the line against another's single request.
 *
 * The line's bound (EXECUTION_QUEUE) is shared the same way: when it is full, a newcomer whose organization has fewer
 * requests waiting than the organization with the most takes the place of that organization's newest request (which
 * is refused with 503 + Retry-After: nothing is lost, its client retries). Pure logic, no clock, no I/O.
 */

/** A request in line. */
export interface FairEntry {
  organizationId: string;
  /** The organization's weight (Organization.fairnessWeight, default 1), read when the request joined. */
  weight: number;
}

interface Queued<T> {
  item: T;
  seq: number;
}

/** Per-organization lines with a fair choice of the next request. */
export class FairLine<T extends FairEntry> {
  private readonly lines = new Map<string, Queued<T>[]>();
  private count = 0;
  private seq = 0;

  /** Requests waiting, all organizations together. */
  get size(): number {
    return this.count;
  }

  /** Organizations with at least one request waiting. */
  get organizations(): number {
    return this.lines.size;
  }

  /** @returns the organizations with at least one request waiting. */
  organizationIds(): IterableIterator<string> {
    return this.lines.keys();
  }

  /** The most requests one organization has waiting. */
  get largest(): number {
    let most = 0;
    for (const line of this.lines.values()) most = Math.max(most, line.length);
    return most;
  }

  /**
   * @param organizationId an organization.
   * @returns its requests waiting.
   */
  waitingOf(organizationId: string): number {
    return this.lines.get(organizationId)?.length ?? 0;
  }

  /** @param item a request joining the back of its organization's line. */
  push(item: T): void {
    let line = this.lines.get(item.organizationId);
    if (!line) this.lines.set(item.organizationId, (line = []));
    line.push({ item, seq: this.seq++ });
    this.count++;
  }

  /**
   * Removes a request (it left: its client went away, its wait ran out, it was admitted).
   * @param item the request.
   * @returns whether it was in line.
   */
  remove(item: T): boolean {
    const line = this.lines.get(item.organizationId);
    const i = line ? line.findIndex((q) => q.item === item) : -1;
    if (!line || i < 0) return false;
    line.splice(i, 1);
    if (line.length === 0) this.lines.delete(item.organizationId);
    this.count--;
    return true;
  }

  /**
   * The request a full line gives up to make room for a newcomer of an organization: the newest request of the
   * organization with the most waiting, when it has at least two more than the newcomer's organization (so that the
   * swap makes the shares more even, never less).
   * @param organizationId the newcomer's organization.
   * @returns the request to refuse, or undefined (refuse the newcomer instead).
   */
  evictionFor(organizationId: string): T | undefined {
    const mine = this.waitingOf(organizationId);
    let worst: Queued<T>[] | undefined;
    for (const line of this.lines.values())
      if (
        !worst ||
        line.length > worst.length ||
        (line.length === worst.length && line.at(-1)!.seq > worst.at(-1)!.seq)
      )
        worst = line;
    if (!worst || worst.length < mine + 2) return undefined;
    return worst.at(-1)!.item;
  }

  /**
   * The request a free slot goes to (not removed: the caller admits it, which removes it).
   * @param running the running slots an organization holds now.
   * @returns the request, or undefined when the line is empty.
   */
  peek(running: (organizationId: string) => number): T | undefined {
    let best: Queued<T> | undefined;
    let bestShare = Infinity;
    for (const [organizationId, line] of this.lines) {
      const head = line[0];
      const share = running(organizationId) / Math.max(head.item.weight, Number.MIN_VALUE);
      if (share < bestShare || (share === bestShare && head.seq < best!.seq)) {
        best = head;
        bestShare = share;
      }
    }
    return best?.item;
  }

  /** @returns every request waiting (shutdown refuses them). */
  all(): T[] {
    return [...this.lines.values()].flatMap((line) => line.map((q) => q.item));
  }
}
