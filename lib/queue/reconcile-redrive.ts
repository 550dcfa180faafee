import { z } from 'zod';
import type { Store } from '../db/store.js';
import { ValidationError } from '../errors.js';
import { parseOrThrow } from '../validation/parse-or-throw.js';
import { findRecoveryOperation, listCheckpoints } from '../recovery/recovery.repository.js';
import type { RecoveryState } from '../recovery/recovery-model.js';
import { takeOverRecoveryOperation } from '../recovery/take-over-recovery-operation.js';
import { REDRIVE_MODULE } from './redrive-dlq.js';

/** Input of {@link reconcileRedrive}. */
export interface ReconcileRedriveInput {
  readonly store: Store;
  /** The `queue.redrive` recovery operation to reconcile. */
  readonly operationId: string;
  /** The reconciling runtime, e.g. `recovery-cli:<host>:<pid>`. */
  readonly leaseOwner: string;
  /** Lease of the reconciliation in **milliseconds**. @default 60000 */
  readonly leaseMs?: number;
}

/** The evidence of a `sent` checkpoint: SQS's message id for the send, and the body digest. */
const SentEvidenceSchema = z.object({ sentMessageId: z.string().min(1), bodyDigest: z.string().min(1) });

/**
 * The `queue.redrive` module's reconciliation action for an interrupted redrive: takes it over (after its lease
 * expired, a stale `running` redrive becomes `outcome_unknown`, docs/design.md §8) and, if its chain holds a `sent`
 * checkpoint — SQS's message id, recorded only after SendMessage returned — resolves it as occurred
 * (`succeeded`, with that id as evidence). Without one it cannot prove either way (SQS cannot be asked whether a
 * message was sent), so the operation stays `outcome_unknown` for an operator. It never re-sends. Either way the
 * dead letter stays in the DLQ: every later redrive skips it, and an operator deletes it.
 * @returns the state the operation is left in: `succeeded` or `outcome_unknown`.
 * @throws {ValidationError} not a `queue.redrive` operation (nothing was taken over).
 * @throws {import('../recovery/recovery-errors.js').NothingToTakeOverError} still leased, terminal, or taken by a racer.
 * @throws {import('../recovery/recovery-errors.js').ChainBrokenError} the chain does not verify; nothing resolved.
 */
export async function reconcileRedrive(input: ReconcileRedriveInput): Promise<RecoveryState> {
  const { store, operationId, leaseOwner, leaseMs = 60_000 } = input;
  const row = await findRecoveryOperation(store, operationId);
  if (!row || row.module !== REDRIVE_MODULE) throw new ValidationError(`Recovery operation ${operationId} is not a ${REDRIVE_MODULE} operation.`);
  const handle = await takeOverRecoveryOperation(store, { operationId, leaseOwner, leaseMs });
  if (handle.state !== 'outcome_unknown') return handle.state;
  const sent = (await listCheckpoints(store, operationId)).find((checkpoint) => checkpoint.kind === 'sent');
  if (!sent) return handle.state;
  const evidence = parseOrThrow(SentEvidenceSchema, JSON.parse(sent.evidence), 'sentCheckpoint');
  await handle.resolveUnknown({
    occurred: true,
    verification: { checks: [{ name: 'sent', evidence: { sentMessageId: evidence.sentMessageId, bodyDigest: evidence.bodyDigest, checkpointSeq: sent.seq } }] },
  });
  return handle.state;
}
