/** What stands in for every value {@link redactEvent} removes. */
export const REDACTED = '[redacted]';

/**
 * Request headers whose values are kept (names compared lower-cased): transport and tracing metadata only. Every other
 * header's value — `authorization`, `cookie`, `idempotency-key`, `x-api-key`, anything new — is redacted, so a secret
 * header added later is hidden by default.
 */
const KEPT_HEADERS: ReadonlySet<string> = new Set([
  'accept',
  'accept-encoding',
  'content-length',
  'content-type',
  'host',
  'origin',
  'traceparent',
  'tracestate',
  'user-agent',
  'x-amzn-trace-id',
  'x-forwarded-port',
  'x-forwarded-proto',
]);

type JsonObject = Record<string, unknown>;

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/** `headers` with every value but {@link KEPT_HEADERS}' replaced by {@link REDACTED}; names are kept. */
function redactHeaders(headers: unknown): unknown {
  if (!isObject(headers)) return headers;
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, KEPT_HEADERS.has(name.toLowerCase()) ? value : REDACTED]));
}

/** `value` itself when absent (`undefined`, `null`, `''`), else {@link REDACTED}: says whether there was one. */
const redactPresent = (value: unknown): unknown => (value === undefined || value === null || value === '' ? value : REDACTED);

/** A copy of `object` with each of `keys` passed through {@link redactPresent}; absent keys stay absent. */
function redactKeys(object: JsonObject, keys: readonly string[]): JsonObject {
  const copy = { ...object };
  for (const key of keys) if (key in copy) copy[key] = redactPresent(copy[key]);
  return copy;
}

/** An API Gateway HTTP API (payload 2.0) event: `version` `2.0` with a `requestContext`. */
const isHttpApiEvent = (event: JsonObject): boolean => event.version === '2.0' && isObject(event.requestContext);

/** An SQS event: a non-empty `Records` list whose every record has `eventSource: aws:sqs`. */
const isSqsEvent = (event: JsonObject): event is JsonObject & { Records: JsonObject[] } =>
  Array.isArray(event.Records) && event.Records.length > 0 && event.Records.every((record) => isObject(record) && record.eventSource === 'aws:sqs');

/** An EventBridge event (a schedule, for the sweeper): string `source` and `detail-type`. */
const isEventBridgeEvent = (event: JsonObject): boolean => typeof event.source === 'string' && typeof event['detail-type'] === 'string';

function redactHttpApiEvent(event: JsonObject): JsonObject {
  const copy = redactKeys(event, ['body', 'cookies', 'rawQueryString', 'queryStringParameters']);
  if ('headers' in copy) copy.headers = redactHeaders(copy.headers);
  const requestContext = redactKeys(event.requestContext as JsonObject, ['authorizer']);
  // The caller's address is personal data: the line keeps the method, path and protocol, never `sourceIp`.
  if (isObject(requestContext.http)) requestContext.http = redactKeys(requestContext.http, ['sourceIp']);
  copy.requestContext = requestContext;
  return copy;
}

function redactSqsRecord(record: JsonObject): JsonObject {
  const copy = redactKeys(record, ['body', 'receiptHandle', 'md5OfBody', 'md5OfMessageAttributes']);
  if (isObject(record.messageAttributes)) copy.messageAttributes = Object.fromEntries(Object.keys(record.messageAttributes).map((name) => [name, REDACTED]));
  return copy;
}

/**
 * A copy of a Lambda invocation event that is safe to log: what identifies and routes the invocation stays, every value
 * that may carry a secret, an idempotency key or user content becomes {@link REDACTED}. Pure; the event is not changed.
 *
 * - **API Gateway HTTP API, payload 2.0** (AWS "Working with AWS Lambda proxy integrations for HTTP APIs"): `body`,
 *   `cookies`, `rawQueryString`, `queryStringParameters` and `requestContext.authorizer` (the JWT claims: `sub`,
 *   scopes, …) and `requestContext.http.sourceIp` (personal data) are redacted; `headers` keep their names, and only transport/tracing headers (`host`, `content-type`,
 *   `user-agent`, `x-amzn-trace-id`, …) keep their values — `authorization`, `cookie`, `idempotency-key`,
 *   `if-none-match` (a digest of an owner's operation) and `x-forwarded-for` (the caller's address) in any case are redacted. Method, path, path parameters (operation ids) and the request id stay.
 * - **SQS** (AWS "Using Lambda with Amazon SQS", event `Records`): each record's `body`, `receiptHandle` (it can delete
 *   the message), `md5OfBody`, `md5OfMessageAttributes` (a digest confirms a guessed body) and every
 *   `messageAttributes` value are redacted; `messageId`, `attributes` and the queue ARN stay.
 * - **EventBridge** (the sweeper's schedule; AWS "Amazon EventBridge events"): `detail` is redacted; `id`, `time`,
 *   `source`, `detail-type` and `resources` stay.
 * - Anything else — an unknown shape, so nothing in it is known to be safe — becomes {@link REDACTED} as a whole.
 * Absent and empty values stay as they are, so a line still says whether a body or query string was there.
 */
export function redactEvent(event: unknown): unknown {
  if (!isObject(event)) return REDACTED;
  if (isHttpApiEvent(event)) return redactHttpApiEvent(event);
  if (isSqsEvent(event)) return { ...event, Records: event.Records.map(redactSqsRecord) };
  if (isEventBridgeEvent(event)) return redactKeys(event, ['detail']);
  return REDACTED;
}
