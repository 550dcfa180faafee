/** Longest `lease_owner` of a recovery operation, in characters (Unicode code points, as the column counts them). */
const LEASE_OWNER_MAX_CHARS = 128;

/**
 * The lease owner an operator's recovery action writes (the DLQ redrive, resolve-unknown; docs/design.md §8):
 * `operator:<sub>`, cut to 128 characters counted as code points — never through a surrogate pair, which would leave a
 * lone surrogate that the drivers store as U+FFFD (so the stored owner would differ from the one the guarded UPDATEs
 * compare). `sub` is a verified owner id (`OwnerUserIdSchema`: at most 128 characters), so only its tail can be cut.
 */
export function operatorLeaseOwner(sub: string): string {
  return Array.from(`operator:${sub}`).slice(0, LEASE_OWNER_MAX_CHARS).join('');
}
