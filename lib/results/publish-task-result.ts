import { compensateResultObject } from './compensate-result-object.js';
import { confirmResultObject } from './confirm-result-object.js';
import type { ResultObjects } from './result-objects.js';
import { writeResultObject } from './write-result-object.js';

/** Input of {@link publishTaskResult}. */
export interface PublishTaskResultInput {
  /** The user operation; the object is `results/<operationId>.json`. */
  readonly operationId: string;
  /** The run's attempt number: the ledger key is `result:<operationId>:<attempt>`. */
  readonly attempt: number;
  /** The JSON body: a summary of ids and counts, never user content. */
  readonly body: string;
  /**
   * The run's commit point, called after the object is written: it must throw if the run no longer stands
   * (cancelled, lease lost, timed out) — typically a heartbeat followed by `signal.throwIfAborted()`.
   */
  readonly settle: () => Promise<void>;
}

/**
 * Publishes a task's result object only if the run that produced it stands (docs/design.md §8, `compensatable`):
 *
 * ```
 *  writeResultObject ─▶ settle() ─▶ confirmResultObject                 → ledger succeeded, object kept
 *                          └─ throws (cancel, lease lost, failure) ─▶ compensateResultObject → verified_recovered, object deleted
 * ```
 *
 * Compensation is retried briefly while SQLite's single writer is busy (the worker acknowledging the very cancel that
 * triggered it). If it fails anyway (S3 or the database down, or the process dies), the ledger operation stays
 * unresolved; after its lease it is taken over and `reconcileResultObject` deletes the object.
 * @throws whatever `settle`, the write or the confirmation threw — the original error, after compensating.
 */
export async function publishTaskResult(results: ResultObjects, input: PublishTaskResultInput): Promise<void> {
  const { s3, bucket, store } = results;
  const written = await writeResultObject({
    s3,
    store,
    bucket,
    operationId: input.operationId,
    writeKey: input.attempt,
    body: input.body,
    leaseOwner: `task:${input.operationId}:${input.attempt}`,
  });
  try {
    await input.settle();
    await confirmResultObject(s3, written);
  } catch (error) {
    // Best effort here; the ledger keeps an unfinished compensation for reconciliation.
    await compensateResultObject({ s3, store, handle: written.handle, reason: 'run_not_kept' }).catch(() => undefined);
    throw error;
  }
}
