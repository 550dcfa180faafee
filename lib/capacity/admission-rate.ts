import type { TxContext } from '../db/database.js';
import { RateLimitedError } from '../errors.js';
import { insertFullBucket, lockBucket, updateBucket, type BucketCaps, type BucketKey, type LockedBucket } from './admission-bucket.repository.js';
import type { AdmissionRate } from './capacity-policy.js';

/**
 * The admission rate limit (docs/design.md §4, admission rate): a token bucket per (task type, owner) kept in the
 * database (`admission_buckets`, SQL in `admission-bucket.repository.ts`), so it holds across any number of Lambda
 * replicas. The bucket holds at most `burst` tokens, refills `burst` tokens per `perSeconds` seconds of **database-clock**
 * time, and every new admission (and owner retry) spends one; rates come from `CapacityPolicy.admissionRate`.
 */

/** Milli-tokens in one token: the bucket is stored as a whole number of thousandths of a token. */
export const MILLI_TOKENS_PER_TOKEN = 1000;

/** Which bucket: one per task type and owner. */
export type AdmissionBucketKey = BucketKey;

/** What {@link decideAdmissionToken} decided. */
export type TokenDecision =
  /** A token was there: store `milliTokens` and move `refilled_at` by `advanceMicros` (µs, may be negative). */
  | { readonly taken: true; readonly milliTokens: number; readonly advanceMicros: number }
  /** No whole token: refuse; `retryAfterSeconds` (whole seconds, ≥ 1) until one is there. Nothing is written. */
  | { readonly taken: false; readonly retryAfterSeconds: number };

const MILLI = BigInt(MILLI_TOKENS_PER_TOKEN);
const MICROS_PER_SECOND = 1_000_000n;

function ceilDiv(a: bigint, b: bigint): bigint {
  return a <= 0n ? a / b : (a + b - 1n) / b;
}

/**
 * The token-bucket arithmetic of one admission, pure and exact (whole milli-tokens and microseconds, in BigInt), on a
 * bucket row as {@link lockBucket} read it:
 *
 * - **Refill.** `elapsed` = µs since `refilled_at` (0 if negative) buys ⌊elapsed × burst × 1000 / (perSeconds × 10⁶)⌋
 *   milli-tokens, capped at `burst × 1000`. Rounding down never grants more than the rate; the fraction not yet bought
 *   is kept, because `refilled_at` moves only by the time the credited milli-tokens cost (rounded up, so never past
 *   now) — to now when the bucket is full (a full bucket accrues nothing) or the clock is behind it.
 * - **Take.** With at least 1000 milli-tokens, one token (1000) is taken.
 * - **Refuse.** Otherwise the wait is `T − elapsed`, `T` = the µs after `refilled_at` at which the stored milli-tokens
 *   plus refill first reach 1000, rounded up to whole seconds (at least 1): the honest wait — an admission that comes
 *   exactly that much later finds the token (unless another took it first).
 *
 * A rate changed in the configuration applies at once: tokens above a lowered `burst` are capped, a raised one refills.
 */
export function decideAdmissionToken(bucket: LockedBucket, rate: AdmissionRate): TokenDecision {
  const burst = BigInt(rate.burst);
  const per = BigInt(rate.perSeconds);
  const capacity = burst * MILLI;
  const stored = BigInt(bucket.milliTokens);
  const elapsed = BigInt(Math.trunc(bucket.elapsedMicros));
  const fullMicros = per * MICROS_PER_SECOND;
  // After `perSeconds` the bucket is full whatever it held: capping keeps the products small.
  const counted = elapsed <= 0n ? 0n : elapsed < fullMicros ? elapsed : fullMicros;
  const credited = (counted * burst) / (per * MILLI);
  let tokens = stored + credited;
  let advance: bigint;
  if (tokens >= capacity) {
    tokens = capacity;
    advance = elapsed;
  } else if (elapsed <= 0n) {
    advance = elapsed;
  } else {
    advance = ceilDiv(credited * per * MILLI, burst);
  }
  if (tokens >= MILLI) return { taken: true, milliTokens: Number(tokens - MILLI), advanceMicros: Number(advance) };
  const untilToken = ceilDiv((MILLI - stored) * per * MILLI, burst);
  const wait = ceilDiv(untilToken - elapsed, MICROS_PER_SECOND);
  return { taken: false, retryAfterSeconds: Math.max(1, Number(wait)) };
}

/**
 * Spends one admission token of the owner's bucket for the task type, inside the caller's admission (or owner retry)
 * transaction, so the token is spent exactly when the admission commits — a rollback (a 429 for capacity, a duplicate
 * key, any error) gives it back. Locks the bucket row (MariaDB `SELECT … FOR UPDATE`); a missing row is a full bucket and
 * is created (concurrency-safe: `INSERT … ON DUPLICATE KEY UPDATE`, which locks an existing row exclusively, then the
 * locked read again). Elapsed time is computed in SQL on the database clock; the arithmetic is
 * {@link decideAdmissionToken}.
 *
 * Call it only when `rate` is defined (`CapacityPolicy.admissionRate`; undefined = not rate limited, no row is ever
 * written), and only for work that is new: an idempotent replay, a reused active operation or a refused key spends none.
 * @param caps the store's capabilities (`store.caps`): its dialect and whether it takes row locks.
 * @param rate `{ burst, perSeconds }`: `burst` tokens at most, refilled `burst` per `perSeconds` **seconds**.
 * @throws {RateLimitedError} no whole token is there; `retryAfterSeconds` says when one is (seconds, ≥ 1). Nothing was
 * written by this call; the caller's transaction must roll back.
 * @throws {Error} should the bucket row vanish under its lock (an invariant broken).
 */
export async function takeAdmissionToken(tx: TxContext, caps: BucketCaps, key: AdmissionBucketKey, rate: AdmissionRate): Promise<void> {
  let bucket = await lockBucket(tx, caps, key);
  if (bucket === undefined) {
    await insertFullBucket(tx, caps, key, rate.burst * MILLI_TOKENS_PER_TOKEN);
    bucket = await lockBucket(tx, caps, key);
    if (bucket === undefined) throw new Error(`Admission bucket ${key.taskType} of an owner vanished after its insert`);
  }
  const decision = decideAdmissionToken(bucket, rate);
  if (!decision.taken) throw new RateLimitedError(decision.retryAfterSeconds);
  if ((await updateBucket(tx, caps, key, decision.milliTokens, decision.advanceMicros)) !== 1) {
    throw new Error(`Admission bucket ${key.taskType} of an owner changed under its lock`);
  }
}
