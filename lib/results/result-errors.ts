import { DurableOpsError } from '../errors.js';

/**
 * Thrown when S3 definitively refused a result-object PutObject (HTTP 4xx, e.g. `NoSuchBucket`, `AccessDenied`): no
 * object was written and the ledger operation is terminal `rejected`.
 */
export class ResultObjectRejectedError extends DurableOpsError {
  readonly code = 'result_object_rejected' as const;
  constructor(
    readonly operationId: string,
    readonly resultCode: string,
  ) {
    super(`S3 refused the result object of recovery operation ${operationId} (${resultCode}); nothing was written.`);
  }
}

/**
 * Thrown when a written result object no longer matches what was written (ETag, size or writer metadata differ, or
 * it is gone) when its write is confirmed. The ledger operation stays `running`: compensate it.
 */
export class ResultObjectMismatchError extends DurableOpsError {
  readonly code = 'result_object_mismatch' as const;
  constructor(readonly operationId: string) {
    super(`The result object of recovery operation ${operationId} does not match what was written.`);
  }
}

/**
 * Thrown when a result object this operation wrote is still present after its DeleteObject. The ledger operation
 * stays `recovering`; compensating again (or a reconciliation after the lease) finishes it.
 */
export class ResultObjectStillPresentError extends DurableOpsError {
  readonly code = 'result_object_still_present' as const;
  constructor(readonly operationId: string) {
    super(`The result object of recovery operation ${operationId} is still present after its deletion.`);
  }
}
