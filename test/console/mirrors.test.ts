/**
 * What the console mirrors of the server, compared with the server's own tables (the console imports nothing of
 * the server): the task state machine (console/src/lib/taskStates.ts) and the organization stream's event types
 * (console/src/lib/organizationEventTypes.ts).
 */
import { SERVICE_EVENT_TYPES } from '../../commands/serviceEvents';
import { TASK_STATUSES, TASK_TRANSITIONS } from '../../models/Task';
import * as consoleTasks from '../../console/src/lib/taskStates';
import { ORGANIZATION_EVENT_TYPES } from '../../console/src/lib/organizationEventTypes';

it('the console’s task state machine is the server’s', () => {
  expect(consoleTasks.TASK_STATUSES).toEqual(TASK_STATUSES);
  expect(consoleTasks.TASK_TRANSITIONS).toEqual(TASK_TRANSITIONS);
});

it('the console listens to every event type the service records', () => {
  expect(ORGANIZATION_EVENT_TYPES).toEqual(SERVICE_EVENT_TYPES);
});
