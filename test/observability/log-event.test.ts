import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApiHandler } from '../../lib/http/api-handler.js';
import { createObservability } from '../../lib/observability/observability.js';
import { REDACTED } from '../../lib/observability/redact-event.js';
import { createWorkerHandler } from '../../lib/worker/worker-handler.js';
import { createApiTestApp, type ApiTestApp } from '../http/api-test-app.js';
import { apiEvent, lambdaContext, parseResponse } from '../support/api-events.js';
import { captureOutput, usePowertoolsEnvironment } from '../support/captured-output.js';
import { testDeps } from '../support/fixtures.js';
import { sqsRecord } from '../support/sqs-events.js';

/** Values that may reach the handler, never a log line. */
const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJsb2ctZXZlbnQtb3duZXIifQ.bG9nLWV2ZW50LXNpZ25hdHVyZQ';
const KEY_MARKER = 'IDEMPOTENCY-KEY-MARKER-5c0a';
const BODY_MARKER = 'BODY-MARKER-e41d';
const QUERY_MARKER = 'QUERY-MARKER-77b3';
const COOKIE_MARKER = 'COOKIE-MARKER-1f08';
const SUB_MARKER = 'SUB-MARKER-b9d6';
const SECRETS = [JWT, KEY_MARKER, BODY_MARKER, QUERY_MARKER, COOKIE_MARKER, SUB_MARKER];

const EVENT_LINE = 'Lambda invocation event';

describe('POWERTOOLS_LOGGER_LOG_EVENT: the invocation event is logged only when enabled, and then redacted', () => {
  let app: ApiTestApp;
  beforeAll(async () => {
    app = await createApiTestApp('sqlite');
  });
  afterAll(async () => app?.drop());
  usePowertoolsEnvironment('DEBUG');

  /** Admits one operation through the real API handler built with the observability of the current environment. */
  async function admitThroughApi(key: string) {
    const observability = createObservability();
    const handler = createApiHandler({ ...app.deps, logger: observability.logger, metrics: observability.metrics }, observability);
    const event = apiEvent({
      method: 'POST',
      path: `/api/operations?note=${QUERY_MARKER}`,
      owner: SUB_MARKER,
      headers: { authorization: `Bearer ${JWT}`, 'idempotency-key': key, cookie: `session=${COOKIE_MARKER}`, 'content-type': 'application/json' },
      body: { taskType: 'test.claimable', subject: { type: 'doc', id: BODY_MARKER } },
    });
    const output = captureOutput();
    const response = parseResponse(await handler(event, lambdaContext()));
    vi.restoreAllMocks();
    return { response, output, event };
  }

  it('enabled: the API logs one event line, with its route and request id, and no token, key, cookie, body, query or claim anywhere', async () => {
    vi.stubEnv('POWERTOOLS_LOGGER_LOG_EVENT', 'true');
    const { response, output, event } = await admitThroughApi(KEY_MARKER);
    expect(response.status).toBe(202);

    const lines = output.json();
    const eventLines = lines.filter((line) => line.message === EVENT_LINE);
    expect(eventLines).toHaveLength(1);
    expect(eventLines[0]).toMatchObject({
      level: 'INFO',
      function_name: 'durable-ops-api-test',
      event: {
        rawPath: '/api/operations',
        rawQueryString: REDACTED,
        body: REDACTED,
        headers: { authorization: REDACTED, 'idempotency-key': REDACTED, cookie: REDACTED, 'content-type': 'application/json' },
        requestContext: { requestId: event.requestContext.requestId, authorizer: REDACTED },
      },
    });
    // The admission's own lifecycle line is there too: the output is the whole invocation's.
    expect(lines.some((line) => line.event === 'operation_admitted')).toBe(true);
    const text = output.text();
    for (const secret of SECRETS) expect(text).not.toContain(secret);
  });

  it('not enabled: the API logs no event line', async () => {
    const { response, output } = await admitThroughApi(`${KEY_MARKER}-off`);
    expect(response.status).toBe(202);
    const lines = output.json();
    expect(lines.some((line) => line.event === 'operation_admitted')).toBe(true);
    expect(lines.filter((line) => line.message === EVENT_LINE || typeof line.event === 'object')).toEqual([]);
    for (const secret of SECRETS) expect(output.text()).not.toContain(secret);
  });

  it('enabled: the worker logs its SQS event with every record body and message attribute redacted', async () => {
    vi.stubEnv('POWERTOOLS_LOGGER_LOG_EVENT', 'true');
    const observability = createObservability();
    const deps = { ...testDeps(), store: app.db.store, logger: observability.logger, metrics: observability.metrics };
    const record = {
      ...sqsRecord(JSON.stringify({ v: 1, reason: 'admitted', note: BODY_MARKER })),
      messageAttributes: { traceparent: { stringValue: QUERY_MARKER, dataType: 'String', stringListValues: [], binaryListValues: [] } },
    };
    const output = captureOutput();
    const result = await createWorkerHandler(deps, observability)({ Records: [record] }, lambdaContext());
    vi.restoreAllMocks();

    // The body is no wake-up (an unknown key): the record fails, and neither the event line nor the error line shows it.
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: record.messageId }] });
    const eventLines = output.json().filter((line) => line.message === EVENT_LINE);
    expect(eventLines).toHaveLength(1);
    expect(eventLines[0]).toMatchObject({
      event: { Records: [{ messageId: record.messageId, body: REDACTED, receiptHandle: REDACTED, messageAttributes: { traceparent: REDACTED } }] },
    });
    for (const secret of [BODY_MARKER, QUERY_MARKER, record.receiptHandle]) expect(output.text()).not.toContain(secret);
  });
});
