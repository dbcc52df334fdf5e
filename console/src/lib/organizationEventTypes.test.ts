/** Which events a subscriber of the organization stream wants (lib/organizationEventTypes.ts). */
import { matchesTypes, ORGANIZATION_EVENT_TYPES } from './organizationEventTypes';

it('matches event types by prefix or whole type', () => {
  expect(matchesTypes('task.created', ['task.'])).toBe(true);
  expect(matchesTypes('chat.status_changed', ['job.', 'chat.status_changed'])).toBe(true);
  expect(matchesTypes('job.done', ['task.', 'chat.'])).toBe(false);
  expect(matchesTypes('job.done', [])).toBe(false);
  expect(ORGANIZATION_EVENT_TYPES.filter((t) => matchesTypes(t, ['task.']))).toHaveLength(5);
});
