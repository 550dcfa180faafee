import middy from '@middy/core';
import { describe, expect, it, vi } from 'vitest';
import { localLambdaContext } from '../../lib/local/lambda-context.js';
import { MetricName } from '../../lib/observability/metrics.js';
import { createObservability, type Observability } from '../../lib/observability/observability.js';
import { captureOutput, usePowertoolsEnvironment } from '../support/captured-output.js';

/** The EMF envelope of a metrics line (AWS "Specification: Embedded metric format"). */
interface EmfEnvelope {
  CloudWatchMetrics: { Namespace: string; Dimensions: string[][] }[];
}

/** One Lambda invocation through `observability`'s middlewares: a debug and an info line, one count. */
async function invoke(observability: Observability, requestId: string): Promise<void> {
  await middy()
    .use([...observability.middlewares])
    .handler(async () => {
      observability.logger.debug('debug detail', { step: 'probe' });
      observability.logger.info('info line', { step: 'probe' });
      observability.metrics.count(MetricName.SweepPurged, 1);
    })({}, localLambdaContext({ functionName: 'durable-ops-settings', timeoutMs: 10_000, requestId }));
}

describe('the standard POWERTOOLS_* variables, read when the observability is built', () => {
  usePowertoolsEnvironment('INFO');

  it('POWERTOOLS_SERVICE_NAME names the service of every log line and the service dimension; POWERTOOLS_METRICS_NAMESPACE the namespace', async () => {
    vi.stubEnv('POWERTOOLS_SERVICE_NAME', 'billing-ops');
    vi.stubEnv('POWERTOOLS_METRICS_NAMESPACE', 'BillingOps');
    const observability = createObservability();
    const output = captureOutput();
    await invoke(observability, 'req-named');
    vi.restoreAllMocks();

    const lines = output.json();
    const logs = lines.filter((line) => typeof line.message === 'string');
    expect(logs.length).toBeGreaterThan(0);
    for (const line of logs) expect(line.service).toBe('billing-ops');
    const emf = lines.filter((line) => typeof line._aws === 'object');
    expect(emf).toHaveLength(1);
    expect(emf[0]).toMatchObject({ service: 'billing-ops', SweepPurged: 1 });
    expect((emf[0]!._aws as EmfEnvelope).CloudWatchMetrics[0]).toMatchObject({ Namespace: 'BillingOps', Dimensions: [['service']] });
  });

  it('unset or blank, the service is durable-ops and the namespace DurableOps', async () => {
    vi.stubEnv('POWERTOOLS_SERVICE_NAME', '  ');
    const observability = createObservability();
    const output = captureOutput();
    await invoke(observability, 'req-default');
    vi.restoreAllMocks();

    const lines = output.json();
    expect(lines.find((line) => line.message === 'info line')).toMatchObject({ service: 'durable-ops' });
    const emf = lines.find((line) => typeof line._aws === 'object')!;
    expect(emf.service).toBe('durable-ops');
    expect((emf._aws as EmfEnvelope).CloudWatchMetrics[0]!.Namespace).toBe('DurableOps');
  });

  it('the variables are read when the observability is built, not at import', async () => {
    const before = createObservability();
    vi.stubEnv('POWERTOOLS_SERVICE_NAME', 'late-ops');
    const after = createObservability();
    const output = captureOutput();
    before.logger.info('built before');
    after.logger.info('built after');
    vi.restoreAllMocks();
    expect(output.json().map((line) => [line.message, line.service])).toEqual([
      ['built before', 'durable-ops'],
      ['built after', 'late-ops'],
    ]);
  });

  it('debug lines print at POWERTOOLS_LOG_LEVEL=DEBUG, with level DEBUG, and not at INFO', async () => {
    const atInfo = createObservability();
    vi.stubEnv('POWERTOOLS_LOG_LEVEL', 'DEBUG');
    const atDebug = createObservability();
    const output = captureOutput();
    await invoke(atInfo, 'req-info');
    const printedAtInfo = output.json().filter((line) => typeof line.message === 'string');
    await invoke(atDebug, 'req-debug');
    vi.restoreAllMocks();

    expect(printedAtInfo.map((line) => line.message)).toEqual(['info line']);
    const debug = output.json().filter((line) => line.message === 'debug detail');
    expect(debug).toHaveLength(1);
    expect(debug[0]).toMatchObject({ level: 'DEBUG', service: 'durable-ops', step: 'probe', function_request_id: 'req-debug' });
  });

  it("Lambda's AWS_LAMBDA_LOG_LEVEL wins over POWERTOOLS_LOG_LEVEL", async () => {
    vi.stubEnv('AWS_LAMBDA_LOG_LEVEL', 'WARN');
    vi.stubEnv('POWERTOOLS_LOG_LEVEL', 'DEBUG');
    const { logger } = createObservability();
    const output = captureOutput();
    logger.debug('dropped');
    logger.info('dropped too');
    logger.warn('kept');
    vi.restoreAllMocks();
    expect(output.json().map((line) => line.message)).toEqual(['kept']);
  });

  it('POWERTOOLS_LOGGER_SAMPLE_RATE=1 makes an INFO logger print debug lines, re-decided at the start of every invocation', async () => {
    vi.stubEnv('POWERTOOLS_LOGGER_SAMPLE_RATE', '1');
    const output = captureOutput();
    const observability = createObservability();
    await invoke(observability, 'req-sampled-1');
    await invoke(observability, 'req-sampled-2');
    vi.restoreAllMocks();

    const lines = output.json();
    const debug = lines.filter((line) => line.message === 'debug detail');
    expect(debug.map((line) => line.function_request_id)).toEqual(['req-sampled-1', 'req-sampled-2']);
    for (const line of debug) expect(line).toMatchObject({ level: 'DEBUG', sampling_rate: 1 });
    // Powertools decides once when the logger is built (the cold start) and again when each later invocation starts
    // (`injectLambdaContext` → `refreshSampleRateCalculation`): one such line each.
    expect(lines.filter((line) => line.message === 'Setting log level to DEBUG due to sampling rate')).toHaveLength(2);
  });

  it('without a sample rate, an INFO logger prints no debug line in any invocation', async () => {
    const output = captureOutput();
    const observability = createObservability();
    await invoke(observability, 'req-unsampled-1');
    await invoke(observability, 'req-unsampled-2');
    vi.restoreAllMocks();
    const levels = output.json().filter((line) => typeof line.message === 'string').map((line) => line.level);
    expect(levels).toEqual(['INFO', 'INFO']);
  });
});
