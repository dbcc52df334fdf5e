/**
 * The words clients read when an execution fails (workflows/failures.ts): the service's own, one code per kind;
 * engine and driver internals never pass through. Pure mapping logic over real Temporal failure classes.
 */
import { ActivityFailure, ApplicationFailure, RetryState, TimeoutFailure, TimeoutType } from '@temporalio/common';
import { providerFailure } from '../../activities/executionReply';
import { ProviderError, ProviderIdleError, ProviderNotConfiguredError } from '../../lib/providers';
import { clientFailure, FAILURES } from '../../workflows/failures';

const activityFailure = (cause: Error): ActivityFailure =>
  new ActivityFailure('Activity task failed', 'generateReply', '1', RetryState.MAXIMUM_ATTEMPTS_REACHED, 'w', cause);

describe('clientFailure', () => {
  it('engine internals become "Chat execution failed" (internal_error)', () => {
    const heartbeat = activityFailure(
      new TimeoutFailure('activity Heartbeat timeout', undefined, TimeoutType.HEARTBEAT)
    );
    expect(clientFailure(heartbeat)).toEqual({ code: 'internal_error', message: 'Chat execution failed' });
    const driver = activityFailure(
      ApplicationFailure.create({ type: 'MongoNetworkError', message: 'connect ECONNREFUSED 10.0.0.5:27017' })
    );
    expect(clientFailure(driver)).toEqual(FAILURES.internal);
    expect(clientFailure(new Error('boom'))).toEqual(FAILURES.internal);
    expect(clientFailure(undefined)).toEqual(FAILURES.internal);
  });

  it('a failure thrown in the service’s words passes through, however deeply wrapped', () => {
    const rejected = ApplicationFailure.create({
      type: 'provider_rejected',
      message: 'The model provider rejected the request: max_tokens is too large',
      nonRetryable: true,
    });
    expect(clientFailure(activityFailure(rejected))).toEqual({
      code: 'provider_rejected',
      message: 'The model provider rejected the request: max_tokens is too large',
    });
  });
});

describe('providerFailure', () => {
  const raw = '400 {"type":"error","error":{"type":"invalid_request_error","message":"model: not found"}}';

  it('a rejection carries the provider’s own one-line message, never its raw body', () => {
    const f = providerFailure(new ProviderError(`Anthropic API error: ${raw}`, false, 400, 'model: not found'), false);
    expect(f).toMatchObject({
      type: 'provider_rejected',
      message: 'The model provider rejected the request: model: not found',
      nonRetryable: true,
    });
    expect(providerFailure(new ProviderError(raw, false, 400), false).message).toBe(
      'The model provider rejected the request'
    );
  });

  it('silence, outages and interruptions in the service’s words; retried only before any output', () => {
    expect(providerFailure(new ProviderIdleError(1000), false)).toMatchObject({
      type: 'provider_timeout',
      message: 'The model provider did not respond',
      nonRetryable: false,
    });
    expect(providerFailure(new ProviderIdleError(1000), true)).toMatchObject({ nonRetryable: true });
    expect(providerFailure(new ProviderError(`Anthropic API error: 529 ${raw}`, true, 529), false)).toMatchObject({
      type: 'provider_unavailable',
      message: 'The model provider is unavailable',
      nonRetryable: false,
    });
    expect(providerFailure(new ProviderError('socket hang up', true), true)).toMatchObject({
      type: 'provider_interrupted',
      message: 'The model provider stopped in the middle of the reply',
      nonRetryable: true,
    });
    expect(providerFailure(new ProviderNotConfiguredError('ANTHROPIC_API_KEY is not set'), false)).toMatchObject({
      type: 'provider_not_configured',
      nonRetryable: true,
    });
  });
});
