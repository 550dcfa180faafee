import { describe, expect, it } from 'vitest';
import { REDACTED, redactEvent } from '../../lib/observability/redact-event.js';
import { apiEvent } from '../support/api-events.js';
import { sqsRecord } from '../support/sqs-events.js';

const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyZWRhY3Qtb3duZXIifQ.c2lnLW1hcmtlcg';
const KEY = 'IDEMPOTENCY-KEY-MARKER-71c2';
const BODY = 'BODY-MARKER-0d4e';
const QUERY = 'QUERY-MARKER-9a1f';
const SUB = 'SUB-MARKER-2b77';
const COOKIE = 'COOKIE-MARKER-e8c3';

describe('redactEvent', () => {
  it('an HTTP API event keeps its route and request id but no authorization, cookie, idempotency key, body, query or claim', () => {
    const event = apiEvent({
      method: 'POST',
      path: `/api/operations?note=${QUERY}`,
      owner: SUB,
      scope: 'ops:read',
      headers: { authorization: `Bearer ${JWT}`, 'idempotency-key': KEY, 'content-type': 'application/json' },
      body: { taskType: 'demo.wait', note: BODY },
    });
    const withMixedCase = {
      ...event,
      headers: { ...event.headers, Authorization: `Bearer ${JWT}`, Cookie: COOKIE, 'Idempotency-Key': KEY, 'X-Api-Key': KEY },
      cookies: [`session=${COOKIE}`],
    };
    const before = JSON.stringify(withMixedCase);

    const redacted = redactEvent(withMixedCase) as typeof withMixedCase;
    const text = JSON.stringify(redacted);
    for (const secret of [JWT, KEY, BODY, QUERY, SUB, COOKIE, 'ops:read']) expect(text).not.toContain(secret);
    expect(redacted).toMatchObject({
      rawPath: '/api/operations',
      rawQueryString: REDACTED,
      queryStringParameters: REDACTED,
      body: REDACTED,
      cookies: REDACTED,
      headers: {
        host: 'api.test',
        'content-type': 'application/json',
        authorization: REDACTED,
        Authorization: REDACTED,
        Cookie: REDACTED,
        'idempotency-key': REDACTED,
        'Idempotency-Key': REDACTED,
        'X-Api-Key': REDACTED,
      },
      requestContext: { requestId: event.requestContext.requestId, http: { method: 'POST', path: '/api/operations' }, authorizer: REDACTED },
    });
    expect(JSON.stringify(withMixedCase)).toBe(before);
  });

  it("an HTTP API event keeps neither the caller's address nor the digest of an owner's operation", () => {
    const event = apiEvent({ method: 'GET', path: '/api/operations/op-1', owner: SUB, headers: { 'if-none-match': '"ETAG-MARKER-5c1d"', 'x-forwarded-for': '198.51.100.23' } });
    const withAddress = { ...event, requestContext: { ...event.requestContext, http: { ...event.requestContext.http, sourceIp: '198.51.100.23' } } };
    const text = JSON.stringify(redactEvent(withAddress));
    for (const personal of ['ETAG-MARKER-5c1d', '198.51.100.23']) expect(text).not.toContain(personal);
    expect(redactEvent(withAddress)).toMatchObject({ requestContext: { http: { method: 'GET', path: '/api/operations/op-1', sourceIp: REDACTED } } });
  });

  it('an HTTP API event without body or query string still says so', () => {
    const redacted = redactEvent(apiEvent({ method: 'GET', path: '/api/operations/op-1', owner: SUB })) as Record<string, unknown>;
    expect(redacted.rawQueryString).toBe('');
    expect('body' in redacted).toBe(false);
    expect('queryStringParameters' in redacted).toBe(false);
  });

  it('an SQS event keeps message ids and attributes but no body, receipt handle, digest or message-attribute value', () => {
    const record = {
      ...sqsRecord(JSON.stringify({ v: 1, reason: 'admitted', note: BODY })),
      md5OfBody: 'a3f1c0ffee',
      messageAttributes: { traceparent: { stringValue: `00-${QUERY}-01`, dataType: 'String', stringListValues: [], binaryListValues: [] } },
    };
    const redacted = redactEvent({ Records: [record] }) as { Records: Record<string, unknown>[] };
    const text = JSON.stringify(redacted);
    for (const secret of [BODY, QUERY, record.receiptHandle, 'a3f1c0ffee']) expect(text).not.toContain(secret);
    expect(redacted.Records[0]).toMatchObject({
      messageId: record.messageId,
      eventSourceARN: record.eventSourceARN,
      attributes: record.attributes,
      body: REDACTED,
      receiptHandle: REDACTED,
      md5OfBody: REDACTED,
      messageAttributes: { traceparent: REDACTED },
    });
  });

  it('a scheduled EventBridge event keeps its id, time and rule but not its detail', () => {
    const scheduled = {
      version: '0',
      id: 'evt-1',
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      account: '123456789012',
      time: '2026-12-02T00:00:00Z',
      region: 'us-east-1',
      resources: ['arn:aws:events:us-east-1:123456789012:rule/sweeper'],
      detail: { note: BODY },
    };
    expect(redactEvent(scheduled)).toEqual({ ...scheduled, detail: REDACTED });
  });

  it('an event of any other shape is redacted whole', () => {
    expect(redactEvent({ token: JWT })).toBe(REDACTED);
    expect(redactEvent({ Records: [{ eventSource: 'aws:sns', Sns: { Message: BODY } }] })).toBe(REDACTED);
    expect(redactEvent(BODY)).toBe(REDACTED);
    expect(redactEvent(null)).toBe(REDACTED);
  });
});
