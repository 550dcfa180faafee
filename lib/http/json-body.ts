import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { ValidationError } from '../errors.js';

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
