import { beginDurableRecoveryOperation } from '../../lib/recovery/begin-recovery-operation.js';
import type { EffectClass } from '../../lib/recovery/recovery-model.js';
import { RecoveryModuleRegistry } from '../../lib/recovery/recovery-modules.js';
import { takeOverRecoveryOperation } from '../../lib/recovery/take-over-recovery-operation.js';
import type { TestDatabase } from '../support/test-store.js';

/**
 * A marker in every value the operator list must never show (idempotency keys, lease owners, the request, the plan,
 * precondition and checkpoint evidence): a response that contains it leaked one of them.
 */
export const HIDDEN = 'zq-hidden';

/** Lease of the operations that must still be held when the operator looks, in **ms** (the ledger's maximum). */
export const LONG_LEASE_MS = 3_600_000;

/** Lease of the operations left to expire, in **ms** (the ledger's minimum). */
const SHORT_LEASE_MS = 1_000;

/** The reconciliation actions the tests register; `test.unregistered` has none on purpose. */
export const TEST_RECONCILIATION = {
  'test.objects': 'Check the object: HEAD it in the results bucket; if present, delete it and record verifyRecovered.',
  'test.queue': 'Check the wake-up: look the message up in the main queue and the DLQ; resolve with resolveUnknown.',
} as const;

/** A registry with {@link TEST_RECONCILIATION}. */
export function testRecoveryModules(): RecoveryModuleRegistry {
  const modules = new RecoveryModuleRegistry();
  for (const [module, reconciliation] of Object.entries(TEST_RECONCILIATION)) modules.register({ module, reconciliation });
  return modules;
}

/** The ids of one recovery operation in each interesting state. */
export interface LedgerFixture {
  readonly succeeded: string;
  readonly rejected: string;
  /** `running`, lease held for {@link LONG_LEASE_MS}: not unresolved. */
  readonly liveRunning: string;
  /** `running`, lease expired on the database clock, module `test.unregistered`. */
  readonly staleRunning: string;
  /** Taken over after expiry (compensatable), lease held by the reconciler. */
  readonly recoveryRequired: string;
  /** Compensation started by its holder, lease held. */
  readonly recovering: string;
  /** Taken over after expiry (forward-only), lease held by the reconciler. */
  readonly outcomeUnknown: string;
  readonly verifiedRecovered: string;
}

/**
 * Writes one recovery operation in each state of {@link LedgerFixture} through the real ledger API. Moves `t`'s
 * database clock forward by just over a second; every lease still held afterwards has {@link LONG_LEASE_MS} left.
 */
export async function buildLedgerFixture(t: TestDatabase): Promise<LedgerFixture> {
  let n = 0;
  const begin = (module: string, effectClass: EffectClass, leaseMs: number) => {
    n += 1;
    return beginDurableRecoveryOperation(t.store, {
      module,
      kind: 'put_object',
      idempotencyKey: `${HIDDEN}-key-${n}`,
      request: { marker: `${HIDDEN}-request`, n },
      effectClass,
      recoveryPlan: { undo: 'delete_object', objectRef: `s3://${HIDDEN}-bucket/obj-${n}` },
      preconditionEvidence: { probe: `${HIDDEN}-precondition` },
      leaseOwner: `${HIDDEN}-owner`,
      leaseMs,
    });
  };
  const takeOver = (operationId: string) => takeOverRecoveryOperation(t.store, { operationId, leaseOwner: `${HIDDEN}-reconciler`, leaseMs: LONG_LEASE_MS });
  const checks = { checks: [{ name: 'object_head', evidence: { etag: `${HIDDEN}-evidence` } }] };

  const staleRunning = await begin('test.unregistered', 'forward_only', SHORT_LEASE_MS);
  await staleRunning.checkpoint('message_sent', { messageRef: `${HIDDEN}-evidence` });
  const compensatable = await begin('test.objects', 'compensatable', SHORT_LEASE_MS);
  const forwardOnly = await begin('test.queue', 'forward_only', SHORT_LEASE_MS);
  t.clock.advance(SHORT_LEASE_MS + 1);
  const recoveryRequired = await takeOver(compensatable.operationId);
  const outcomeUnknown = await takeOver(forwardOnly.operationId);

  const liveRunning = await begin('test.objects', 'compensatable', LONG_LEASE_MS);
  const succeeded = await begin('test.objects', 'compensatable', LONG_LEASE_MS);
  await succeeded.complete(checks);
  const rejected = await begin('test.queue', 'forward_only', LONG_LEASE_MS);
  await rejected.reject({ providerResult: 'HTTP_409' });
  const recovering = await begin('test.objects', 'compensatable', LONG_LEASE_MS);
  await recovering.requireRecovery({ reason: 'downstream_write_failed' });
  await recovering.startRecovery({ action: 'delete_object' });
  const verifiedRecovered = await begin('test.objects', 'compensatable', LONG_LEASE_MS);
  await verifiedRecovered.requireRecovery({ reason: 'downstream_write_failed' });
  await verifiedRecovered.startRecovery({ action: 'delete_object' });
  await verifiedRecovered.verifyRecovered(checks);

  return {
    succeeded: succeeded.operationId,
    rejected: rejected.operationId,
    liveRunning: liveRunning.operationId,
    staleRunning: staleRunning.operationId,
    recoveryRequired: recoveryRequired.operationId,
    recovering: recovering.operationId,
    outcomeUnknown: outcomeUnknown.operationId,
    verifiedRecovered: verifiedRecovered.operationId,
  };
}
