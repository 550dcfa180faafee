import { v7 as uuidv7 } from 'uuid';
import { z } from 'zod';

/** An operation id: a lower-case UUID. */
export const OperationIdSchema = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'must be an operation id');

/**
 * A new operation id: a lower-case UUID version 7 (RFC 9562 §5.7, from the `uuid` package) — 48 bits of Unix time in
 * ms, then 74 bits that are random for the first id of each millisecond; later ids of the same millisecond in one
 * process count up from it (monotonic), so only about 42 of their bits are fresh. The first 8 hex digits are time: show
 * the last ones when an id must be shortened.
 *
 * Why time-ordered rather than random (v4): the id is the primary key of `operations` and the last column of every
 * secondary index entry, so new rows and their index entries (including the many `NULL` entries of
 * `lease_expires_at`, `wake_at` and the claim lane once an operation ends) land at the right edge of each B-tree. With
 * random ids each admission, claim and completion touches a random page among all of history, which once history
 * outgrows the buffer pool means reading pages from disk (the benchmark's cost-growth target). The id stays unguessable
 * enough not to matter: every read is owner-scoped (docs/design.md §3), and it reveals only the creation time the DTO shows
 * anyway.
 */
export function newOperationId(): string {
  return uuidv7();
}
