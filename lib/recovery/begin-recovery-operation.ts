import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Store } from '../db/store.js';
import { canonicalJson, sha256Hex } from '../hashing/request-hash.js';
import { ValidationError } from '../errors.js';
import { parseOrThrow } from '../validation/parse-or-throw.js';
import { genesisEvidence } from './chain-verification.js';
import { parseEvidence, type Evidence } from './evidence.js';
import { checkpointHash, GENESIS_PREV_HASH } from './hash-chain.js';
import { RecoveryHandle } from './recovery-handle.js';
import { RecoveryKeyUsedError } from './recovery-errors.js';
import { writeIndependently } from './independent-write.js';
import { EFFECT_CLASSES, type EffectClass } from './recovery-model.js';
import { findRecoveryByKey, insertCheckpoint, insertRecoveryOperation } from './recovery.repository.js';

const NameSchema = z.string().regex(/^[a-z][a-z0-9_.-]{0,63}$/, 'must be lower-case [a-z0-9_.-], at most 64 characters');

/** Input of {@link beginDurableRecoveryOperation}. */
export const BeginRecoverySchema = z.strictObject({
  /** The owning module, e.g. `results.s3`: it registers the reconciliation action operators see. */
  module: NameSchema,
  /** What the effect is, e.g. `put_object`. */
  kind: NameSchema,
  /** Unique per module, for ever: one key, one attempt. */
  idempotencyKey: z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/),
  /** The request the effect performs; only its canonical SHA-256 is stored. */
  request: z.unknown(),
  effectClass: z.enum(EFFECT_CLASSES),
  /** How to undo or check the effect (opaque references only). */
  recoveryPlan: z.record(z.string(), z.unknown()),
  /** What was true before acting (opaque references, digests, counts). */
  preconditionEvidence: z.record(z.string(), z.unknown()),
  /** Who holds the lease, e.g. a Lambda request id. */
  leaseOwner: z.string().min(1).max(128),
  /** Lease length in **milliseconds**. */
  leaseMs: z.number().int().min(1_000).max(3_600_000),
});

/** See {@link BeginRecoverySchema}. */
export type BeginRecoveryInput = z.input<typeof BeginRecoverySchema> & { recoveryPlan: Evidence; preconditionEvidence: Evidence; effectClass: EffectClass };

/**
 * Commits the intent of an external effect **before the caller acts** (docs/design.md §8): the canonical request hash (RFC
 * 8785 JSON, SHA-256), effect class, recovery plan, precondition evidence, `running` state and lease fence 1, with the
 * genesis checkpoint of its hash chain — in one transaction on an independent connection, committed when this
 * returns. The caller then acts and records what happened through the returned handle.
 * @throws {RecoveryKeyUsedError} the module already used this idempotency key (a new attempt needs a new key).
 * @throws {ValidationError | SecretInEvidenceError} invalid input, or plan/evidence that is not opaque.
 */
export async function beginDurableRecoveryOperation(store: Store, input: BeginRecoveryInput): Promise<RecoveryHandle> {
  const parsed = parseOrThrow(BeginRecoverySchema, input, 'input');
  const recoveryPlan = canonicalJson(parseEvidence(parsed.recoveryPlan, 'recoveryPlan'));
  const preconditionEvidence = canonicalJson(parseEvidence(parsed.preconditionEvidence, 'preconditionEvidence'));
  for (const [path, json, max] of [['recoveryPlan', recoveryPlan, 2048], ['preconditionEvidence', preconditionEvidence, 8192]] as const) {
    if (json.length > max) throw new ValidationError(`Invalid ${path}.`, [{ path, message: `must encode to at most ${max} characters` }]);
  }
  const id = randomUUID();
  const row = {
    idempotency_key: parsed.idempotencyKey,
    module: parsed.module,
    kind: parsed.kind,
    request_hash: sha256Hex(canonicalJson(parsed.request ?? null)),
    effect_class: parsed.effectClass,
    recovery_plan: recoveryPlan,
    precondition_evidence: preconditionEvidence,
  };
  const evidenceJson = canonicalJson(genesisEvidence(row));
  const hash = checkpointHash({ operationId: id, seq: 0, kind: 'begin', state: 'running', fence: 1, previousFence: null, evidenceJson, prevHash: GENESIS_PREV_HASH });
  try {
    await writeIndependently(store, 'the intent', async (tx) => {
      await insertRecoveryOperation(
        tx,
        { id, ...row, state: 'running', lease_owner: parsed.leaseOwner, fence: 1, chain_head_hash: hash, checkpoint_count: 1 },
        parsed.leaseMs,
      );
      await insertCheckpoint(tx, { operation_id: id, seq: 0, kind: 'begin', state: 'running', fence: 1, previous_fence: null, evidence: evidenceJson, prev_hash: GENESIS_PREV_HASH, hash });
    });
  } catch (error) {
    if (!store.caps.isDuplicateKey(error)) throw error;
    const existing = await findRecoveryByKey(store.independent(), parsed.module, parsed.idempotencyKey);
    throw new RecoveryKeyUsedError(parsed.module, existing?.id ?? 'unknown');
  }
  return new RecoveryHandle(store, {
    operationId: id,
    module: parsed.module,
    effectClass: parsed.effectClass,
    leaseOwner: parsed.leaseOwner,
    leaseMs: parsed.leaseMs,
    fence: 1,
    state: 'running',
    count: 1,
    headHash: hash,
  });
}
