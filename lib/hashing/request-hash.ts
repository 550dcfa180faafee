import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';

/**
 * Canonical JSON of `value` per RFC 8785 (JSON Canonicalization Scheme): sorted keys, no whitespace, ECMAScript
 * number formatting. Implemented by the `canonicalize` package (the RFC's reference implementation).
 * @throws {TypeError} when `value` cannot be encoded (e.g. `undefined` at the top level, a non-finite number).
 */
export function canonicalJson(value: unknown): string {
  const text = (canonicalize as unknown as (input: unknown) => string | undefined)(value);
  if (text === undefined) throw new TypeError('Value has no canonical JSON form');
  return text;
}

/** Lower-case hex SHA-256 of a UTF-8 string. */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * The request hash that an idempotency key is bound to (docs/design.md §2): SHA-256 of the canonical JSON of
 * `{ taskType, subject, params }`, with params as validated (so equivalent spellings hash alike).
 */
export function requestHash(taskType: string, subject: { type: string; id: string }, params: unknown): string {
  return sha256Hex(canonicalJson({ taskType, subject: { type: subject.type, id: subject.id }, params }));
}
