import { DurableOpsError } from '../errors.js';

/**
 * Thrown when a ledger write's fence is stale: another runtime took the operation over (or the lease expired on the
 * database clock, or the chain moved on). Nothing was written.
 */
export class StaleFenceError extends DurableOpsError {
  readonly code = 'stale_fence' as const;
  constructor(
    readonly operationId: string,
    readonly fence: number,
  ) {
    super(`Recovery operation ${operationId}: fence ${fence} is stale; nothing was written.`);
  }
}

/** Thrown when a recovery operation's hash chain does not verify: completion and resolution are refused. */
export class ChainBrokenError extends DurableOpsError {
  readonly code = 'chain_broken' as const;
  constructor(
    readonly operationId: string,
    readonly seq: number,
    readonly reason: string,
  ) {
    super(`Recovery operation ${operationId}: hash chain broken at checkpoint ${seq} (${reason}).`);
  }
}

/** Thrown when completion or resolution comes without at least one passed verification check. */
export class VerificationRequiredError extends DurableOpsError {
  readonly code = 'verification_required' as const;
}

/** Thrown when a handle's move is not allowed from the operation's state (see `RECOVERY_MOVES`). */
export class InvalidRecoveryMoveError extends DurableOpsError {
  readonly code = 'invalid_recovery_move' as const;
  constructor(
    readonly operationId: string,
    readonly state: string,
    readonly move: string,
  ) {
    super(`Recovery operation ${operationId} is ${state}: ${move} is not allowed.`);
  }
}

/**
 * Thrown when `beginDurableRecoveryOperation` is given an idempotency key its module already used. A key names one
 * attempt for ever: after an outcome was resolved, a new attempt needs a new, deliberate key (docs/design.md §8).
 */
export class RecoveryKeyUsedError extends DurableOpsError {
  readonly code = 'recovery_key_used' as const;
  constructor(
    readonly module: string,
    readonly existingOperationId: string,
  ) {
    super(`The idempotency key was already used by recovery operation ${existingOperationId} of module ${module}.`);
  }
}

/** Thrown when a claim or takeover finds nothing to take: not expired, already taken by a racer, or terminal. */
export class NothingToTakeOverError extends DurableOpsError {
  readonly code = 'nothing_to_take_over' as const;
  constructor(readonly operationId: string) {
    super(`Recovery operation ${operationId} is not available for takeover.`);
  }
}

/**
 * Thrown on SQLite when an independent ledger write finds the database write-locked by another connection — typically
 * the caller's own open write transaction. SQLite has one writer, so the write fails at once rather than hang; use
 * the atomic terminal methods inside a transaction, or write checkpoints outside it. MariaDB has no such limit.
 */
export class IndependentWriteBlockedError extends DurableOpsError {
  readonly code = 'independent_write_blocked' as const;
}

/** True for SQLite's "database is locked" family (`SQLITE_BUSY*`), which an independent write meets at once. */
export function isSqliteBusy(error: unknown): boolean {
  return typeof error === 'object' && error !== null && String((error as { code?: unknown }).code ?? '').startsWith('SQLITE_BUSY');
}

/** Thrown when an operator names a recovery operation that does not exist (or an id that is not one): HTTP 404. */
export class RecoveryOperationNotFoundError extends DurableOpsError {
  readonly code = 'recovery_operation_not_found' as const;
  constructor(readonly operationId: string) {
    super('Recovery operation not found.');
  }
}
