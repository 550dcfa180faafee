import { context, propagation, ROOT_CONTEXT, type Context, type TextMapGetter } from '@opentelemetry/api';
import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';

/**
 * The active trace context as SQS message attributes — `traceparent`, and `tracestate` when there is one (W3C Trace
 * Context Level 1), each a `String` attribute — for `SendMessageBatchRequestEntry.MessageAttributes`. Empty when
 * tracing is off or no span is active. Message attributes, not the `AWSTraceHeader` system attribute: that one is
 * X-Ray's and Lambda's own, and an SQS-triggered function's X-Ray segment does not take it as its parent.
 */
export function traceContextAttributes(active: Context = context.active()): Record<string, MessageAttributeValue> {
  const carrier: Record<string, string> = {};
  propagation.inject(active, carrier);
  const attributes: Record<string, MessageAttributeValue> = {};
  for (const name of ['traceparent', 'tracestate'] as const) {
    const value = carrier[name];
    if (value) attributes[name] = { DataType: 'String', StringValue: value };
  }
  return attributes;
}

const recordGetter: TextMapGetter<SQSRecord['messageAttributes']> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key]?.stringValue ?? undefined,
};

/**
 * The trace context an SQS record carries in its `traceparent` / `tracestate` message attributes (as Lambda's SQS
 * event delivers them: `record.messageAttributes.traceparent.stringValue`), to parent the record's consumer span on
 * the span that sent it. The root context when the record carries none or a malformed one.
 */
export function traceContextOfRecord(record: SQSRecord): Context {
  return propagation.extract(ROOT_CONTEXT, record.messageAttributes ?? {}, recordGetter);
}
