import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { ValidationError } from '../errors.js';
import { UnsupportedMediaTypeError } from './http-errors.js';

/**
 * Largest request body the API parses, in **bytes** (16 KiB). An admission body is a task type, a subject reference
 * and params whose canonical JSON is at most 4096 characters (`FieldLimits.paramsJson`), so anything bigger is not
 * a valid request and is refused before `JSON.parse` spends time on it.
 */
export const MAX_JSON_BODY_BYTES = 16 * 1024;

/**
 * Largest `POST /api/jobs` body, in **bytes** (256 KiB): a 20,000-character description whose every character a client
 * escaped as `\uXXXX` (Python's `json.dumps` default) fits, with room for the title and company.
 */
export const MAX_JOB_BODY_BYTES = 256 * 1024;

function invalidBody(message: string): ValidationError {
  return new ValidationError('The request body must be a JSON object.', [{ path: 'body', message }]);
}

/**
 * Parses the JSON object in an API Gateway (payload 2.0) event body, decoding base64 first when API Gateway did
 * (`isBase64Encoded`, used for non-text media types). Schema validation is left to the service that owns the shape.
 * @returns the parsed object (never an array or `null`).
 * @param maxBytes the route's body limit in bytes. @default {@link MAX_JSON_BODY_BYTES}
 * @throws {ValidationError} when the body is missing or empty, larger than `maxBytes`, not valid
 * JSON, or not a JSON object. The issue never echoes the body.
 */
export function parseJsonObjectBody(
  event: Pick<APIGatewayProxyEventV2, 'body' | 'isBase64Encoded'>,
  maxBytes: number = MAX_JSON_BODY_BYTES,
): Record<string, unknown> {
  if (event.body === undefined || event.body === '') throw invalidBody('is required');
  const raw = event.isBase64Encoded ? Buffer.from(event.body, 'base64') : Buffer.from(event.body, 'utf8');
  if (raw.byteLength > maxBytes) throw invalidBody(`must be at most ${maxBytes} bytes`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    throw invalidBody('is not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw invalidBody('must be a JSON object');
  return parsed as Record<string, unknown>;
}

/**
 * Whether a `Content-Type` value names JSON: `application/json` or a structured `+json` type such as
 * `application/merge-patch+json` (RFC 6839 §3.1), case-insensitively (RFC 9110 §8.3.1), with any parameters — but a
 * `charset` parameter only as `utf-8` (RFC 8259 §8.1: JSON exchanged between systems is UTF-8).
 */
function isJsonMediaType(contentType: string): boolean {
  const [essence = '', ...parameters] = contentType.split(';');
  if (!/^application\/(?:[a-z0-9!#$&^_.+-]+\+)?json$/i.test(essence.trim())) return false;
  return parameters.every((parameter) => {
    const [name = '', value = ''] = parameter.split('=', 2).map((part) => part.trim());
    return name.toLowerCase() !== 'charset' || value.replace(/^"(.*)"$/, '$1').toLowerCase() === 'utf-8';
  });
}

/**
 * The request-body rules every route shares, checked before the route reads anything (the API handler calls it for
 * each routed request, so the Lambda and the local server apply them alike):
 * - a route that takes no body (its `RouteDoc` declares none) refuses a non-empty one: it would otherwise be ignored
 *   silently;
 * - a route that takes a JSON body refuses a non-empty body that is not declared as JSON (see {@link isJsonMediaType});
 *   a body without a `Content-Type` is refused too, as RFC 9110 §8.3 allows treating it as `application/octet-stream`.
 * An absent or empty body passes either way (the route decides whether it needs one); so does the `Content-Type` of an
 * empty body.
 * @param takesBody whether the route declares a request body.
 * @throws {ValidationError} (400) for a body where the route takes none; the issue never echoes the body.
 * @throws {UnsupportedMediaTypeError} (415) for a body that is not declared as JSON.
 */
export function checkRequestBody(event: Pick<APIGatewayProxyEventV2, 'body' | 'headers'>, takesBody: boolean): void {
  if (event.body === undefined || event.body === '') return;
  if (!takesBody) throw new ValidationError('This route takes no request body.', [{ path: 'body', message: 'must be absent: this route takes no body' }]);
  const contentType = Object.entries(event.headers ?? {}).find(([name]) => name.toLowerCase() === 'content-type')?.[1];
  if (contentType === undefined || !isJsonMediaType(contentType)) throw new UnsupportedMediaTypeError();
}
