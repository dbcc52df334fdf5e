/**
 * A data-query process [docs/decisions.md "Data blocks"]: forked by lib/dataQuery.ts, runs one query at a time with
 * lib/dataQueryEngine.ts and talks to its parent over the IPC channel only. Its heap is capped by the parent
 * (`--max-old-space-size`) and the parent kills it past the query's time limit, so a runaway query can take down
 * this process at worst, never the api. It exits when the parent goes away.
 */
import { runReadOnlyQuery } from './dataQueryEngine';
import { AppError, rebuildError } from './errors';
import type { FromParent, ToParent } from './dataQuery';

const send = (message: ToParent): void => {
  if (process.connected) process.send?.(message);
};

let nextAsk = 0;
const answers = new Map<number, (answer: Extract<FromParent, { type: 'resolved' }>) => void>();

process.on('message', (message: FromParent) => {
  if (message.type === 'resolved') {
    answers.get(message.ask)?.(message);
    answers.delete(message.ask);
    return;
  }
  const resolveTable = (name: string): Promise<string | null> =>
    new Promise((resolve, reject) => {
      const ask = (nextAsk += 1);
      answers.set(ask, (answer) => (answer.error ? reject(rebuildError(answer.error)) : resolve(answer.file)));
      send({ type: 'resolve', ask, name });
    });
  runReadOnlyQuery(message.sql, resolveTable, message.limits).then(
    (result) => send({ type: 'done', result }),
    (err: unknown) =>
      send({
        type: 'failed',
        error:
          err instanceof AppError
            ? { status: err.status, code: err.code, message: err.message }
            : { status: 500, code: 'internal_error', message: err instanceof Error ? err.message : String(err) },
      })
  );
});
process.on('disconnect', () => process.exit(0));
send({ type: 'ready' });
