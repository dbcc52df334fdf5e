/** The cron preview of the mission form (lib/cronPreview.ts): the next runs in a zone, and clear messages. */
import { browserTimeZone, cronPreview, formatRun, isTimeZone, scheduleText } from './cronPreview';

const from = new Date('2026-12-02T10:30:00Z'); // a Wednesday

it('lists the next 5 runs of a weekday schedule in its own time zone', () => {
  const p = cronPreview('0 9 * * 1-5', 'Europe/Paris', 5, from);
  if (!p.ok) throw new Error(p.message);
  // 09:00 in Paris is 08:00 UTC in December; Wednesday's has passed, so Thursday first, then Friday, Monday…
  expect(p.runs.map((d) => d.toISOString())).toEqual([
    '2026-12-03T08:00:00.000Z',
    '2026-12-04T08:00:00.000Z',
    '2026-12-07T08:00:00.000Z',
    '2026-12-08T08:00:00.000Z',
    '2026-12-09T08:00:00.000Z',
  ]);
});

it('follows the zone’s clock over a daylight-saving change', () => {
  const p = cronPreview('30 2 * * *', 'America/New_York', 2, new Date('2026-03-07T12:00:00Z'));
  if (!p.ok) throw new Error(p.message);
  expect(p.runs[0].toISOString()).toBe('2026-03-08T07:30:00.000Z'); // the 8th: 02:30 does not exist, croner moves on
  expect(p.runs).toHaveLength(2);
});

it('accepts extra spaces, as the service normalizes them', () => {
  expect(cronPreview('  */15   *  * * * ', 'UTC', 3, from)).toEqual({
    ok: true,
    runs: [new Date('2026-12-02T10:45:00Z'), new Date('2026-12-02T11:00:00Z'), new Date('2026-12-02T11:15:00Z')],
  });
});

it('says what is wrong before anything is sent', () => {
  expect(cronPreview('', 'UTC')).toEqual({ ok: false, message: expect.stringContaining('Enter a cron expression') });
  expect(cronPreview('0 9 * *', 'UTC')).toEqual({ ok: false, message: expect.stringContaining('5 fields') });
  expect(cronPreview('0 0 9 * * *', 'UTC')).toEqual({ ok: false, message: expect.stringContaining('5 fields') });
  expect(cronPreview('61 9 * * *', 'UTC')).toEqual({ ok: false, message: expect.stringContaining('not valid') });
  expect(cronPreview('0 9 * * mon-xyz', 'UTC')).toEqual({ ok: false, message: expect.stringContaining('not valid') });
  expect(cronPreview('0 9 * * *', 'Mars/Olympus')).toEqual({
    ok: false,
    message: 'Mars/Olympus is not a known time zone.',
  });
  expect(cronPreview('0 0 30 2 *', 'UTC', 5, from)).toEqual({ ok: false, message: 'This schedule never runs.' });
});

it('knows time zones, and writes a run in the reader’s zone with its name', () => {
  expect(isTimeZone('Asia/Tokyo')).toBe(true);
  expect(isTimeZone('')).toBe(false);
  expect(isTimeZone('Nowhere/Else')).toBe(false);
  expect(isTimeZone(browserTimeZone())).toBe(true);
  const text = formatRun(new Date('2026-12-03T08:00:00Z'), 'Asia/Tokyo', 'en-GB');
  expect(text).toContain('17:00');
  expect(text).toContain('3 Dec 2026');
  expect(text).toContain('Thu');
  expect(text).toMatch(/GMT\+9|JST/);
});

it('writes a stored schedule in words', () => {
  expect(scheduleText({ type: 'cron', value: '0 9 * * 1-5', timezone: 'Europe/Paris' }, 'UTC')).toBe(
    '0 9 * * 1-5 (Europe/Paris)'
  );
  expect(scheduleText({ type: 'manual', value: null, timezone: 'UTC' }, 'UTC')).toBe('manual');
  expect(scheduleText({ type: 'once', value: '2030-01-01T09:00:00.000Z', timezone: 'UTC' }, 'UTC')).toMatch(
    /^once, .*2030.*09:00/
  );
});
