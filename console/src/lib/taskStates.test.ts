/** The Tasks page's state machine (lib/taskStates.ts): buttons offered = allowed next states. */
import { canClaim, canRun, nextMoves, TASK_STATUSES, TASK_TRANSITIONS } from './taskStates';

it('offers exactly the allowed next states', () => {
  for (const status of TASK_STATUSES) expect(nextMoves(status).map((m) => m.to)).toEqual(TASK_TRANSITIONS[status]);
  expect(nextMoves('pending').map((m) => m.label)).toEqual(['Start', 'Cancel task']);
  expect(nextMoves('completed')).toEqual([]);
  expect(nextMoves('unknown')).toEqual([]);
});

it('claims open unassigned tasks and runs pending agent tasks only', () => {
  expect(canClaim({ status: 'pending', assignedTo: null }, 'usr_1')).toBe(true);
  expect(canClaim({ status: 'pending', assignedTo: 'usr_2' }, 'usr_1')).toBe(false);
  expect(canClaim({ status: 'completed' }, 'usr_1')).toBe(false);
  expect(canClaim({ status: 'pending' }, undefined)).toBe(false);
  expect(canRun({ status: 'pending', assigneeType: 'agent' })).toBe(true);
  expect(canRun({ status: 'in_progress', assigneeType: 'agent' })).toBe(false);
  expect(canRun({ status: 'pending', assigneeType: 'user' })).toBe(false);
});
