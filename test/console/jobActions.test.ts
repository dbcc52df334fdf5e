/**
 * The console's job actions (console/src/lib/jobActions.ts) agree with the service's job state machine
 * (workflows/jobStates.ts): the same states and actions, and each action offered in exactly the states the service
 * accepts it in.
 */
import { ACTION_STATES, allowedActions, JOB_ACTIONS, JOB_STATUSES } from '../../console/src/lib/jobActions';
import * as machine from '../../workflows/jobStates';

it('knows the same states and actions as the service', () => {
  expect([...JOB_STATUSES]).toEqual([...machine.JOB_STATUSES]);
  expect([...JOB_ACTIONS]).toEqual([...machine.JOB_ACTIONS]);
});

it('offers each action in exactly the states the state machine accepts it in', () => {
  for (const status of machine.JOB_STATUSES) {
    const expected = machine.JOB_ACTIONS.filter((a) => machine.acceptsAction(status, a));
    expect({ status, actions: allowedActions(status) }).toEqual({ status, actions: expected });
  }
  for (const action of machine.JOB_ACTIONS) {
    expect({ action, states: [...ACTION_STATES[action]] }).toEqual({
      action,
      states: machine.JOB_STATUSES.filter((s) => machine.acceptsAction(s, action)),
    });
  }
});
