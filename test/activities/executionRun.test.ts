/**
 * Shape 4 (activities/executionRun.ts, workflows/agentExecution.ts): the reply and its finish in one local activity.
 * When the finish fails after the reply completed, the workflow finishes the execution itself with the reply the
 * activity answered: the execution completes with its reply once, and the model is not called again. The worker here
 * runs the real workflows and activities; only the first finish inside runExecution is made to fail.
 */
import { readFileSync } from 'node:fs';
import { NativeConnection } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { createActivities } from '../../activities';
import { HEARTBEAT_THROTTLE } from '../../activities/executionReply';
import { createRunExecution } from '../../activities/executionRun';
import { temporalExtensions } from '../../lib/dataConverter';
import { ServiceWorker } from '../../worker/workflowThreads';
import { temporalConnectionOptions } from '../../lib/temporal';
import { deliveredText } from '../../activities/executionEvents';
import { readEvents } from '../../commands/eventLog';
import { Execution, type ExecutionDoc } from '../../models';
import { executionWorkflowId } from '../../workflows/ids';
import { buildOrg } from '../helpers/factories';
import { testLogger } from '../helpers/env';
import { useTestDatabase } from '../helpers/mongo';
import { v1As } from '../helpers/v1';
import { useExecutionStack } from '../helpers/worker';

useTestDatabase();
const stack = useExecutionStack('execution-run', {}, { worker: false });

it('a finish that fails inside runExecution is done by the workflow, with the reply it answered', async () => {
  const logger = testLogger();
  const activities = createActivities({ logger, config: stack.t.config });
  let finishFailures = 0;
  let replies = 0;
  const generateReply: typeof activities.generateReply = (...args) => {
    replies += 1;
    return activities.generateReply(...args);
  };
  const runExecution = createRunExecution(
    generateReply,
    async () => {
      finishFailures += 1;
      throw new Error('the database went away');
    },
    logger
  );
  const connection = await NativeConnection.connect(temporalConnectionOptions(stack.t.config));
  const bundlePath = process.env.AAS_WORKFLOW_BUNDLE;
  const worker = await ServiceWorker.create({
    connection,
    namespace: stack.t.config.temporalNamespace,
    taskQueue: stack.t.config.temporalTaskQueue,
    ...temporalExtensions(stack.t.config).worker(bundlePath ? { code: readFileSync(bundlePath, 'utf8') } : undefined),
    activities: { ...activities, generateReply, runExecution },
    maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE,
    shutdownGraceTime: '1 second',
  });
  const running = worker.run();
  try {
    const org = await buildOrg();
    const as = v1As(stack.t, org.apiToken);
    const agent = await as.post('/agents', { name: 'Echo', systemPrompt: 'x' });
    const res = await as.post(`/agents/${agent.body.id}/execute`, { message: '[chunks:3] hi' });
    expect(res.status).toBe(200);
    expect(res.body.result).toBe('tok1 tok2 tok3 ');
    expect({ replies, finishFailures }).toEqual({ replies: 1, finishFailures: 1 });
    const exec = (await Execution.findById(res.body.executionId).lean<ExecutionDoc>())!;
    expect(exec).toMatchObject({ status: 'completed', result: 'tok1 tok2 tok3 ' });
    // One attempt's counts: the reply ran once.
    expect(Object.keys(exec.usageByAttempt ?? {})).toHaveLength(1);
    // The stream as a client replays it: the reply's text once, then one result.
    const events = await readEvents(exec._id);
    expect(deliveredText(events)).toBe('tok1 tok2 tok3 ');
    expect(events.filter((e) => e.event === 'result')).toHaveLength(1);
    // Two markers: runExecution (the reply, no finish) and the workflow's own finish.
    const handle = stack.t.temporal.client.workflow.getHandle(executionWorkflowId(exec._id));
    await handle.result();
    const history = await handle.fetchHistory();
    const markers = (history.events ?? []).filter(
      (e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_MARKER_RECORDED
    );
    expect(markers).toHaveLength(2);
  } finally {
    worker.shutdown();
    await running;
    await connection.close();
  }
}, 60_000);
