import { createHash } from 'node:crypto';
import type { ApiEvent, ApiResult } from './route-types.js';

/**
 * Conditional GET (RFC 9110 §13.1.2, §15.4.5) for a route whose body is a pure function of what it reads — the status
 * URL, `GET /api/operations/{id}`, polled until the operation ends.
 *
 * Why a hash of the body and not a row version: the operations row has no version column. `updated_at` is set by each
 * write (a convention of the repositories, not enforced by the schema) at the database clock's resolution —
 * milliseconds on SQLite — so two writes in one tick (a progress heartbeat right after a claim) would share a
 * validator; the `operation_events` sequence records status and attempt changes only, not progress or
 * `cancelRequested`. The SHA-256 of the exact body bytes changes whenever any byte of the body does — which is what a
 * *strong* validator must do (RFC 9110 §8.8.1) — costs no schema change, and names nothing the body does not show.
 */

/** `Cache-Control` of a conditional response: only the caller's own cache may keep it, and must revalidate each use. */
export const CONDITIONAL_CACHE_CONTROL = 'private, no-cache';

/** The strong entity tag of `body` (RFC 9110 §8.8.3): `"<base64url SHA-256 of its UTF-8 bytes>"`, 45 characters. */
export function strongEtagOf(body: string): string {
  return `"${createHash('sha256').update(body, 'utf8').digest('base64url')}"`;
}

/** One `entity-tag` of a list (RFC 9110 §8.8.3): optional `W/`, then an opaque tag of `etagc`, quotes included. */
const ENTITY_TAG = /\s*(?:W\/)?("[\x21\x23-\x7e\x80-\xff]*")\s*/y;

/**
 * Whether `ifNoneMatch` matches `etag` (RFC 9110 §13.1.2): `*` matches any current representation; otherwise the
 * comma-separated list matches when one of its tags equals `etag` by the **weak** comparison (§8.8.3.2: `W/` ignored,
 * opaque tags equal). A header that is not a valid list matches nothing — the request is then answered as if it were
 * unconditional, which is always a correct answer to a GET.
 * @param etag a strong entity tag, quotes included.
 */
export function ifNoneMatchMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  if (ifNoneMatch.trim() === '*') return true;
  const tags: string[] = [];
  let at = 0;
  while (at < ifNoneMatch.length) {
    if (/[\s,]/.test(ifNoneMatch[at]!)) {
      at += 1;
      continue;
    }
    ENTITY_TAG.lastIndex = at;
    const match = ENTITY_TAG.exec(ifNoneMatch);
    if (!match || (ENTITY_TAG.lastIndex < ifNoneMatch.length && ifNoneMatch[ENTITY_TAG.lastIndex] !== ',')) return false;
    tags.push(match[1]!);
    at = ENTITY_TAG.lastIndex;
  }
  return tags.includes(etag);
}

/**
 * Makes a 200 `result` conditional on the request's `If-None-Match`: its `ETag` is {@link strongEtagOf} its body and
 * its `Cache-Control` {@link CONDITIONAL_CACHE_CONTROL}. When `If-None-Match` matches, the answer is **304 Not
 * Modified** with no body and the same `ETag` and `Cache-Control` (RFC 9110 §15.4.5: the headers a 200 would carry
 * that a cache needs). Call it only after the route has authorised and scoped the read, so that a 304 is never an
 * answer about a resource the caller may not see (another owner's operation stays a 404).
 */
export function conditionalGetResponse(event: ApiEvent, result: ApiResult): ApiResult {
  const etag = strongEtagOf(result.body ?? '');
  const validators = { etag, 'cache-control': CONDITIONAL_CACHE_CONTROL };
  if (ifNoneMatchMatches(event.headers?.['if-none-match'], etag)) return { statusCode: 304, headers: validators };
  return { ...result, headers: { ...result.headers, ...validators } };
}
