/**
 * @param d a stored time (a Date, or its ISO text as some workflow results carry it), or nothing.
 * @returns its ISO 8601 text, or null: every presenter's optional times.
 */
export function iso(d: Date | string | null | undefined): string | null {
  return d ? new Date(d).toISOString() : null;
}
