import type { Transaction } from 'kysely';
import type { Database, DbContext } from '../db/database.js';
import type { Store } from '../db/store.js';
import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { canonicalJson } from '../hashing/request-hash.js';
import { parseOrThrow } from '../validation/parse-or-throw.js';
import { parseEvidence, type Evidence } from './evidence.js';
import { UnknownResolutionSchema, verificationEvidence, type UnknownResolution, type Verification } from './unknown-resolution.js';
import { checkpointHash } from './hash-chain.js';
import { loadVerifiedChain } from './chain-verification.js';
import {
  ChainBrokenError,
  InvalidRecoveryMoveError,
  StaleFenceError,
} from './recovery-errors.js';
import { RECOVERY_MOVES, TERMINAL_RECOVERY_STATES, type EffectClass, type RecoveryMove, type RecoveryState } from './recovery-model.js';
import { advanceChain, insertCheckpoint, renewRecoveryLease } from './recovery.repository.js';
import { writeIndependently } from './independent-write.js';

export type { UnknownResolution, Verification } from './unknown-resolution.js';

/** The state a handle knows: where the chain ends and under which fence it writes. */
export interface HandleState {
  readonly operationId: string;
  readonly module: string;
  readonly effectClass: EffectClass;
  readonly leaseOwner: string;
  readonly leaseMs: number;
  fence: number;
  state: RecoveryState;
  count: number;
  headHash: string;
}

/** Longest canonical JSON of one checkpoint's evidence, in characters: the `recovery_checkpoints.evidence` column. */
export const MAX_EVIDENCE_JSON = 8192;

/** A progress checkpoint's kind: a name like `object_written`, never free text (it enters the chain unscanned). */
const CheckpointKindSchema = z.string().regex(/^[a-z][a-z0-9_.-]{0,63}$/, 'must be lower-case [a-z0-9_.-], at most 64 characters');

/**
 * A claimed durable recovery operation (docs/design.md §8): the only way to write its checkpoints. Every write is fenced
 * (fence + lease owner + unexpired lease + chain position, in SQL) and goes through an **independent connection**
 * (`store.independent()`), never the caller's transaction — so a rollback of the caller's work cannot erase the
 * evidence of an effect. The atomic terminal methods (`completeIn`, `rejectIn`) are the exception by design: they
 * stage the terminal checkpoint in the caller's transaction, for database-only effects.
 *
 * ```
 *   begin ──(commit)──▶ caller acts ──▶ checkpoint(s) ──▶ complete(verification) → succeeded
 *                                   └─▶ reject(evidence)                      → rejected
 *                                   └─▶ requireRecovery → startRecovery → verifyRecovered
 *   lease expires ──▶ takeover(new fence) → failed | recovery_required | outcome_unknown → resolveUnknown(…)
 * ```
 */
export class RecoveryHandle {
  readonly #store: Store;
  readonly #s: HandleState;

  /** @internal Built by `beginDurableRecoveryOperation` or a takeover; not for direct use. */
  constructor(store: Store, state: HandleState) {
    this.#store = store;
    this.#s = state;
  }

  get operationId(): string {
    return this.#s.operationId;
  }
  get state(): RecoveryState {
    return this.#s.state;
  }
  get fence(): number {
    return this.#s.fence;
  }
  get effectClass(): EffectClass {
    return this.#s.effectClass;
  }

  /**
   * Extends the lease `leaseMs` past the database clock without writing a checkpoint: a long effect keeps its lease
   * this way. Fenced like every write.
   * @throws {StaleFenceError} the lease already expired or the operation was taken over.
   */
  async renewLease(): Promise<void> {
    const s = this.#s;
    const changed = await renewRecoveryLease(this.#store.independent(), {
      operationId: s.operationId,
      fence: s.fence,
      leaseOwner: s.leaseOwner,
      expectedCount: s.count,
      extendMs: s.leaseMs,
    });
    if (changed !== 1) throw new StaleFenceError(s.operationId, s.fence);
  }

  /**
   * Records progress evidence while running (e.g. "object written, etag sha256:…") and extends the lease.
   * @throws {StaleFenceError} the operation was taken over; nothing written.
   * @throws {SecretInEvidenceError | ValidationError} evidence that is not opaque; nothing written.
   */
  async checkpoint(kind: string, evidence: Evidence): Promise<void> {
    await this.#append('progress', parseOrThrow(CheckpointKindSchema, kind, 'kind'), parseEvidence(evidence, 'evidence'));
  }

  /**
   * Verified success: re-verifies the whole chain, then writes the terminal `succeeded` checkpoint with the checks.
   * @throws {VerificationRequiredError} no check, or a check without evidence.
   * @throws {ChainBrokenError} the stored chain does not verify; nothing written.
   * @throws {StaleFenceError} the operation was taken over.
   */
  async complete(verification: Verification): Promise<void> {
    const evidence = verificationEvidence(verification);
    await this.#verifyChain(this.#store.independent());
    await this.#append('complete', 'completed', evidence);
  }

  /** A definitive pre-effect or provider rejection: terminal `rejected`, never reported as success or recovery. */
  async reject(evidence: Evidence): Promise<void> {
    this.#assertNoEffectRecorded('reject');
    await this.#append('reject', 'rejected', parseEvidence(evidence, 'evidence'));
  }

  /** The effect must be compensated: `recovery_required`. */
  async requireRecovery(evidence: Evidence): Promise<void> {
    await this.#append('require_recovery', 'recovery_required', parseEvidence(evidence, 'evidence'));
  }

  /** Compensation has started: `recovering`. */
  async startRecovery(evidence: Evidence): Promise<void> {
    await this.#append('start_recovery', 'recovering', parseEvidence(evidence, 'evidence'));
  }

  /** Compensation verified: terminal `verified_recovered` (chain re-verified, checks required, as for completion). */
  async verifyRecovered(verification: Verification): Promise<void> {
    const evidence = verificationEvidence(verification);
    await this.#verifyChain(this.#store.independent());
    await this.#append('verify_recovered', 'verified_recovered', evidence);
  }

  /**
   * Resolves `outcome_unknown` from external evidence; it never guesses provider state (docs/design.md §8). Proof the effect
   * happened → verified `succeeded`. Proof it did not → `recovery_required` → `recovering` → `verified_recovered`.
   * Either way the idempotency key stays spent: a new attempt needs a new key. The resolution must also pass
   * `UnknownResolutionSchema` (check names, at most 16 checks).
   * @throws {InvalidRecoveryMoveError} the operation is not `outcome_unknown`.
   * @throws {VerificationRequiredError | ChainBrokenError | StaleFenceError} as for {@link complete}.
   * @throws {ValidationError | SecretInEvidenceError} a resolution that fails the schema, or evidence that is not opaque.
   */
  async resolveUnknown(resolution: UnknownResolution): Promise<void> {
    if (this.#s.state !== 'outcome_unknown') throw new InvalidRecoveryMoveError(this.#s.operationId, this.#s.state, 'resolve_unknown');
    const evidence = verificationEvidence(resolution.verification);
    const { occurred } = parseOrThrow(UnknownResolutionSchema, resolution, 'resolution');
    await this.#verifyChain(this.#store.independent());
    if (occurred) {
      await this.#append('resolve_occurred', 'resolved_occurred', evidence);
      return;
    }
    await this.#append('resolve_not_occurred', 'resolved_not_occurred', evidence);
    await this.#append('start_recovery', 'recovering', { reason: 'effect_did_not_occur' });
    await this.#append('verify_recovered', 'verified_recovered', evidence);
  }

  /**
   * Atomic terminal method for database-only operations: stages the `succeeded` checkpoint and the lease release in
   * the caller's transaction, so they commit with the domain rows or roll back with them (then the `running` record
   * stays, for stale-fence handling). Never commit domain state first and close the record afterwards. The handle
   * takes the terminal state as soon as the write is staged: after a rollback, discard it (a takeover handles the
   * record once its lease expires).
   */
  async completeIn(trx: Transaction<Database>, verification: Verification): Promise<void> {
    const evidence = verificationEvidence(verification);
    // The chain is read as committed (independent connection), not through the caller's transaction, whose
    // snapshot may predate this operation.
    await this.#verifyChain(this.#store.independent());
    await this.#append('complete', 'completed', evidence, trx);
  }

  /** Atomic terminal rejection in the caller's transaction (see {@link completeIn}). */
  async rejectIn(trx: Transaction<Database>, evidence: Evidence): Promise<void> {
    this.#assertNoEffectRecorded('reject');
    await this.#append('reject', 'rejected', parseEvidence(evidence, 'evidence'), trx);
  }

  /** A rejection means nothing happened: refused once a progress checkpoint recorded an effect (docs/design.md §8). */
  #assertNoEffectRecorded(move: string): void {
    if (this.#s.count > 1) throw new InvalidRecoveryMoveError(this.#s.operationId, `${this.#s.state} with recorded effects`, move);
  }

  async #verifyChain(ctx: DbContext): Promise<void> {
    const verdict = await loadVerifiedChain(ctx, this.#s.operationId);
    if (!verdict.ok) throw new ChainBrokenError(this.#s.operationId, verdict.seq, verdict.reason);
  }

  /** Appends one fenced checkpoint: the guarded head move and the row insert in one transaction. */
  async #append(move: RecoveryMove, kind: string, evidence: Evidence, trx?: Transaction<Database>): Promise<void> {
    const s = this.#s;
    const rule = RECOVERY_MOVES[move] as (typeof RECOVERY_MOVES)[string];
    if (!rule.from.includes(s.state)) throw new InvalidRecoveryMoveError(s.operationId, s.state, move);
    const evidenceJson = canonicalJson(evidence);
    if (evidenceJson.length > MAX_EVIDENCE_JSON) {
      throw new ValidationError('Evidence is too large.', [{ path: 'evidence', message: `must encode to at most ${MAX_EVIDENCE_JSON} characters` }]);
    }
    const content = { operationId: s.operationId, seq: s.count, kind, state: rule.to, fence: s.fence, previousFence: null, evidenceJson, prevHash: s.headHash };
    const hash = checkpointHash(content);
    const write = async (ctx: DbContext) => {
      const changed = await advanceChain(ctx, {
        operationId: s.operationId,
        fence: s.fence,
        leaseOwner: s.leaseOwner,
        fromStates: rule.from,
        expectedCount: s.count,
        state: rule.to,
        headHash: hash,
        lease: TERMINAL_RECOVERY_STATES.includes(rule.to) ? 'release' : { extendMs: s.leaseMs },
      });
      if (changed !== 1) throw new StaleFenceError(s.operationId, s.fence);
      await insertCheckpoint(ctx, {
        operation_id: s.operationId,
        seq: s.count,
        kind,
        state: rule.to,
        fence: s.fence,
        previous_fence: null,
        evidence: evidenceJson,
        prev_hash: s.headHash,
        hash,
      });
    };
    if (trx) await write({ db: trx, timeAt: this.#store.timeAt });
    else await writeIndependently(this.#store, 'the checkpoint', write);
    s.count += 1;
    s.headHash = hash;
    s.state = rule.to;
  }
}
