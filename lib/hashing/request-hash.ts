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
 * What an admission asked of its one operation besides the task (docs/design.md §4): each field only when the request
 * gave it, as validated — `runAt` normalised to ISO-8601 UTC with milliseconds, so equivalent spellings hash alike.
 */
export interface RequestedOptions {
  readonly priority?: number | undefined;
  readonly delaySeconds?: number | undefined;
  readonly runAt?: string | undefined;
}

/**
 * The request hash that an idempotency key is bound to (docs/design.md §2): SHA-256 of the canonical JSON of
 * `{ taskType, subject, params }`, with params as validated (so equivalent spellings hash alike), plus each of
 * `priority`, `delaySeconds` and `runAt` that the request gave — so the same key with another delay or priority is a
 * different request (422), and a request without them hashes exactly as before they existed.
 */
export function requestHash(taskType: string, subject: { type: string; id: string }, params: unknown, options: RequestedOptions = {}): string {
  const { priority, delaySeconds, runAt } = options;
  const given = Object.fromEntries(Object.entries({ priority, delaySeconds, runAt }).filter(([, value]) => value !== undefined));
  return sha256Hex(canonicalJson({ taskType, subject: { type: subject.type, id: subject.id }, params, ...given }));
}
