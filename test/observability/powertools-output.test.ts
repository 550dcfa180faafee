import middy from '@middy/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { localLambdaContext } from '../../lib/local/lambda-context.js';
import { MetricName } from '../../lib/observability/metrics.js';
import { createObservability, publishMetricsMiddleware } from '../../lib/observability/observability.js';
import { admitOperation } from '../../lib/operations/admission/admit-operation.js';
import { OwnerScope } from '../../lib/operations/scopes.js';
import { createWorkerHandler } from '../../lib/worker/worker-handler.js';
import { testDeps } from '../support/fixtures.js';
import { wakeupEvent } from '../support/sqs-events.js';
import { captureOutput, usePowertoolsEnvironment } from '../support/captured-output.js';
import { RecordingLogger } from '../support/recording-observability.js';
import { createTestDatabase, type TestDatabase } from '../support/test-store.js';

/** An EMF document as CloudWatch reads it (AWS "Specification: Embedded metric format"). */
interface Emf {
  _aws: { Timestamp: number; CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[] };
  [key: string]: unknown;
}

const isEmf = (line: Record<string, unknown>): line is Emf => typeof line._aws === 'object';

describe('Powertools logger and metrics output', () => {
  usePowertoolsEnvironment('INFO');

  it('an invocation prints JSON log lines (service durable-ops, Lambda context) and, when it ends, EMF per task type', async () => {
    const observability = createObservability();
    const handler = middy()
      .use([...observability.middlewares])
      .handler(async () => {
        observability.logger.info('operation admitted', { event: 'operation_admitted', operationId: 'op-1', taskType: 'demo.wait' });
        observability.metrics.count(MetricName.OperationAdmitted, 1, { taskType: 'demo.wait' });
        observability.metrics.count(MetricName.OperationAdmitted, 1, { taskType: 'demo.wait' });
        observability.metrics.count(MetricName.OperationClaimed, 1, { taskType: 'strategy.snapshot' });
        observability.metrics.count(MetricName.SweepPurged, 3);
      });
    const output = captureOutput();
    await handler({}, localLambdaContext({ functionName: 'durable-ops-api', timeoutMs: 30_000, requestId: 'req-observed-1' }));
    vi.restoreAllMocks();

    const lines = output.json();
    const log = lines.find((line) => line.message === 'operation admitted');
    expect(log).toMatchObject({
      level: 'INFO',
      service: 'durable-ops',
      timestamp: expect.any(String),
      function_name: 'durable-ops-api',
      function_request_id: 'req-observed-1',
      cold_start: expect.any(Boolean),
      event: 'operation_admitted',
      operationId: 'op-1',
      taskType: 'demo.wait',
    });

    const emf = lines.filter(isEmf);
    expect(emf).toHaveLength(3);
    for (const doc of emf) {
      expect(doc._aws.CloudWatchMetrics).toHaveLength(1);
      expect(doc._aws.CloudWatchMetrics[0]!.Namespace).toBe('DurableOps');
      expect(doc.service).toBe('durable-ops');
    }
    const byTaskType = (taskType: string | undefined) => emf.find((doc) => doc.taskType === taskType)!;
    expect(byTaskType('demo.wait')).toMatchObject({ OperationAdmitted: 2 });
    expect(byTaskType('demo.wait')._aws.CloudWatchMetrics[0]).toMatchObject({
      Dimensions: [['service', 'taskType']],
      Metrics: [{ Name: 'OperationAdmitted', Unit: 'Count' }],
    });
    expect(byTaskType('strategy.snapshot')).toMatchObject({ OperationClaimed: 1 });
    expect(byTaskType(undefined)).toMatchObject({ SweepPurged: 3 });
    expect(byTaskType(undefined)._aws.CloudWatchMetrics[0]!.Dimensions).toEqual([['service']]);
  });

  it('the log level comes from POWERTOOLS_LOG_LEVEL', async () => {
    vi.stubEnv('POWERTOOLS_LOG_LEVEL', 'WARN');
    const { logger } = createObservability();
    const output = captureOutput();
    logger.info('dropped at WARN');
    logger.warn('kept at WARN', { count: 1 });
    vi.restoreAllMocks();
    expect(output.json().map((line) => line.message)).toEqual(['kept at WARN']);
  });

  it('an invocation that counted nothing prints no EMF, and a failing publish never fails the invocation', async () => {
    const { middlewares } = createObservability();
    const output = captureOutput();
    await middy().use([...middlewares]).handler(async () => 'ok')({}, localLambdaContext({ functionName: 'f', timeoutMs: 1_000 }));
    vi.restoreAllMocks();
    expect(output.json().filter(isEmf)).toEqual([]);

    const logger = new RecordingLogger();
    const broken = publishMetricsMiddleware({ count() {}, publish: () => { throw new Error('boom'); } }, logger);
    expect(await middy().use(broken).handler(async () => 'ok')({}, localLambdaContext({ functionName: 'f', timeoutMs: 1_000 }))).toBe('ok');
    expect(logger.lines).toMatchObject([{ level: 'ERROR', message: expect.stringContaining('metrics publish failed') }]);
  });

  describe('the worker Lambda handler', () => {
    let t: TestDatabase;
    beforeAll(async () => {
      t = await createTestDatabase('sqlite');
    });
    afterAll(async () => t?.drop());

    it('logs its lifecycle lines with the Lambda context and publishes their metrics when the batch ends', async () => {
      const observability = createObservability();
      const deps = { ...testDeps(), store: t.store, logger: observability.logger, metrics: observability.metrics };
      const output = captureOutput();
      const { operation } = await admitOperation(new OwnerScope(t.store, 'emf-owner'), deps, 'emf-key-1', { taskType: 'test.noop', subject: { type: 'doc', id: 'd1' } });
      const handler = createWorkerHandler(deps, observability);
      expect(await handler(wakeupEvent(), localLambdaContext({ functionName: 'durable-ops-worker', timeoutMs: 60_000, requestId: 'req-worker-1' }))).toEqual({
        batchItemFailures: [],
      });
      vi.restoreAllMocks();

      const lines = output.json();
      for (const event of ['operation_claimed', 'operation_succeeded']) {
        expect(lines.find((line) => line.event === event)).toMatchObject({
          service: 'durable-ops',
          function_name: 'durable-ops-worker',
          function_request_id: 'req-worker-1',
          operationId: operation.id,
          taskType: 'test.noop',
        });
      }
      const emf = lines.filter(isEmf);
      expect(emf).toHaveLength(1);
      expect(emf[0]).toMatchObject({ taskType: 'test.noop', OperationAdmitted: 1, OperationClaimed: 1, OperationSucceeded: 1 });
      expect(emf[0]!._aws.CloudWatchMetrics[0]!.Dimensions).toEqual([['service', 'taskType']]);
    });
  });
});
