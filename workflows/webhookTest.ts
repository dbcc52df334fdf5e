/**
 * @module webhookTest: POST /api/messaging-integration/test (workflow id `webhook-test-<eventId>`): one signed
 * `test` delivery, sent once by the worker like every outbound request, whose outcome the api waits for.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { WebhookActivities } from '../activities/webhooks';
import type { TestResult } from './definitions';

const { webhookSendTest } = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '20 seconds',
  retry: { maximumAttempts: 1 },
});

/**
 * @param input the test event's id and the organization.
 * @returns the receiver's status and latency.
 */
export async function webhookTest(input: { eventId: string; organizationId: string }): Promise<TestResult> {
  return webhookSendTest(input);
}
