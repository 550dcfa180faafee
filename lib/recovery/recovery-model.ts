/**
 * The vocabulary of the durable recovery ledger (docs/design.md §8).
 *
 * Effect classes — what an interrupted effect leaves behind, and so what a takeover must do:
 * - `database_atomic`: the effect is rows in our own database, committed with the terminal checkpoint
 *   (atomic terminal methods); a stale one rolled back, so it becomes `failed`.
 * - `compensatable`: an external effect that can be undone (delete the object); a stale one becomes
 *   `recovery_required`.
 * - `forward_only`: an external effect that cannot be undone but can be checked (a queue send); a stale one becomes
 *   `outcome_unknown`.
 * - `irreversible`: an external effect that can neither be undone nor safely repeated (a payment); stale →
 *   `outcome_unknown`.
 */
export const EFFECT_CLASSES = ['database_atomic', 'compensatable', 'forward_only', 'irreversible'] as const;

/** One of {@link EFFECT_CLASSES}. */
export type EffectClass = (typeof EFFECT_CLASSES)[number];

/**
 * States of a recovery operation.
 * - `running`: intent committed; the holder of the lease is (or was) acting.
 * - `succeeded`: verified success (terminal).
 * - `rejected`: a definitive pre-effect or provider rejection; nothing happened (terminal).
 * - `failed`: a stale `database_atomic` operation whose transaction rolled back (terminal).
 * - `recovery_required` → `recovering` → `verified_recovered` (terminal): compensation, each step evidenced.
 * - `outcome_unknown`: a stale forward-only/irreversible effect; only `resolveUnknown` with evidence leaves it.
 */
export const RECOVERY_STATES = [
  'running',
  'succeeded',
  'rejected',
  'failed',
  'recovery_required',
  'recovering',
  'verified_recovered',
  'outcome_unknown',
] as const;

/** One of {@link RECOVERY_STATES}. */
export type RecoveryState = (typeof RECOVERY_STATES)[number];

/** States after which nothing more is written. */
export const TERMINAL_RECOVERY_STATES: readonly RecoveryState[] = ['succeeded', 'rejected', 'failed', 'verified_recovered'];

/** States an operator must look at: what the `GET /api/ops/recovery` list shows (with stale `running`). */
export const UNRESOLVED_RECOVERY_STATES: readonly RecoveryState[] = ['recovery_required', 'recovering', 'outcome_unknown'];

/** What a stale operation of each effect class becomes at takeover (docs/design.md §8). Takeover never re-executes. */
export const TAKEOVER_STATE: Readonly<Record<EffectClass, RecoveryState>> = Object.freeze({
  database_atomic: 'failed',
  compensatable: 'recovery_required',
  forward_only: 'outcome_unknown',
  irreversible: 'outcome_unknown',
});

/**
 * The moves between states a handle may make (takeover and claims are separate). Every write checks its move here
 * first; the guarded UPDATE checks the same `from` state in SQL.
 */
export const RECOVERY_MOVES: Readonly<Record<string, { readonly from: readonly RecoveryState[]; readonly to: RecoveryState }>> = Object.freeze({
  progress: { from: ['running'], to: 'running' },
  complete: { from: ['running'], to: 'succeeded' },
  reject: { from: ['running'], to: 'rejected' },
  require_recovery: { from: ['running'], to: 'recovery_required' },
  resolve_not_occurred: { from: ['outcome_unknown'], to: 'recovery_required' },
  start_recovery: { from: ['recovery_required'], to: 'recovering' },
  verify_recovered: { from: ['recovering'], to: 'verified_recovered' },
  resolve_occurred: { from: ['outcome_unknown'], to: 'succeeded' },
});

/** A move of {@link RECOVERY_MOVES}. */
export type RecoveryMove = keyof typeof RECOVERY_MOVES;
