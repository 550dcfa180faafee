/**
 * Primary-key order of rows keyed by (task type, owner) — `owner_turns`, `owner_capacity` — as the database orders
 * them (`utf8mb4_nopad_bin`: by UTF-8 bytes, which is code point order), not JavaScript's `<`, which compares UTF-16
 * code units and puts an astral character (😀) before U+E000–U+FFFF (！). Every writer that locks several such rows
 * (claims, completions, the stored procedures, `markOwnersReady`) must lock them in this one order (docs/design.md §4).
 */
export function byPairKey(a: { readonly taskType: string; readonly ownerUserId: string }, b: { readonly taskType: string; readonly ownerUserId: string }): number {
  return Buffer.compare(Buffer.from(a.taskType), Buffer.from(b.taskType)) || Buffer.compare(Buffer.from(a.ownerUserId), Buffer.from(b.ownerUserId));
}
