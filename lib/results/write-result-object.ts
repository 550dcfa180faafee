import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { z } from 'zod';
import { isProviderRefusal, providerResult } from '../aws/provider-fault.js';
import type { Store } from '../db/store.js';
import { sha256Hex } from '../hashing/request-hash.js';
import { parseOrThrow } from '../validation/parse-or-throw.js';
import { beginDurableRecoveryOperation } from '../recovery/begin-recovery-operation.js';
import type { RecoveryHandle } from '../recovery/recovery-handle.js';
import { compensateResultObject } from './compensate-result-object.js';
import { headResultObject } from './head-result-object.js';
import { ResultObjectRejectedError } from './result-errors.js';
import { bareEtag, objectRef, PUT_OBJECT_KIND, RESULT_OBJECTS_MODULE, resultObjectKey, WRITER_METADATA_KEY } from './result-object-ledger.js';

/** Largest result object body, in bytes (UTF-8). Results are small summaries, never payloads. */
const MAX_RESULT_BYTES = 262_144;

/** Input of {@link writeResultObject} besides the S3 client and store. */
export const WriteResultObjectSchema = z.strictObject({
  /** Bucket of result objects (`RESULTS_BUCKET`). */
  bucket: z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/),
  /** The user operation whose result this is; the object key is `results/<operationId>.json`. */
  operationId: z.string().regex(/^[A-Za-z0-9-]{1,64}$/),
  /**
   * What makes this write one attempt, in the ledger key `result:<operationId>:<writeKey>`: the operation's attempt
   * number, or another deliberate caller key. A key is spent for ever, whatever the outcome.
   */
  writeKey: z.union([z.number().int().min(1).max(1_000_000), z.string().regex(/^[A-Za-z0-9._-]{1,40}$/)]),
  /** The JSON body. Only its SHA-256 and size reach the ledger. */
  body: z.string().refine((body) => Buffer.byteLength(body, 'utf8') <= MAX_RESULT_BYTES, `must be at most ${MAX_RESULT_BYTES} bytes`),
  /** Who holds the ledger lease, e.g. `task:<operationId>:<attempt>`. */
  leaseOwner: z.string().min(1).max(128),
  /** Ledger lease in **milliseconds**: how long the write may stay unconfirmed before a takeover may compensate it. @default 60000 */
  leaseMs: z.number().int().min(1_000).max(3_600_000).default(60_000),
});

/** Input of {@link writeResultObject}. */
export type WriteResultObjectInput = z.input<typeof WriteResultObjectSchema> & { readonly s3: S3Client; readonly store: Store };

/** A result object written and checkpointed but not yet confirmed: its ledger operation is still `running`. */
export interface WrittenResultObject {
  /** The claimed ledger operation; confirm it ({@link confirmResultObject}) or compensate it. */
  readonly handle: RecoveryHandle;
  readonly bucket: string;
  readonly key: string;
  /** The S3 ETag PutObject returned, without quotes. */
  readonly etag: string;
  /** Body size in bytes. */
  readonly bytes: number;
  /** `sha256:<hex>` of the body. */
  readonly bodyDigest: string;
}

/**
 * Writes an operation's result object to S3 through the recovery ledger (docs/design.md §8, effect class `compensatable`):
 *
 * ```
 *  HeadObject (existed?) ─▶ begin(results.s3/put_object, plan: delete s3://bucket/key) ─▶ PutObject
 *     ─▶ checkpoint object_written {etag, bytes, bodyDigest} ─▶ return (still running)
 *  PutObject 4xx                 ─▶ reject {resultCode}          ─▶ ResultObjectRejectedError
 *  PutObject 5xx / no answer, or ─▶ compensate (delete if ours)  ─▶ rethrow
 *  a failed checkpoint
 * ```
 *
 * The ledger operation stays `running` until the caller decides the result stands: {@link confirmResultObject}
 * verifies it with HeadObject and completes it; `compensateResultObject` deletes it. If the process dies in between,
 * the lease expires, a takeover classifies it `recovery_required`, and `reconcileResultObject` deletes it. The object
 * carries the ledger operation id as user metadata (`x-amz-meta-recovery-operation`), so compensation only ever
 * deletes the object this write put there. An existing object (an earlier attempt's) is overwritten and recorded as
 * `objectExisted: true`; compensation cannot restore it (the bucket is not versioned).
 * Sources: AWS S3 API reference, PutObject and HeadObject.
 * @throws {ValidationError} invalid input; nothing was done.
 * @throws {import('../recovery/recovery-errors.js').RecoveryKeyUsedError} the write key was already used.
 * @throws {ResultObjectRejectedError} S3 refused the PutObject (4xx); the ledger operation is `rejected`.
 * @throws the HeadObject error before anything is recorded; or, after `begin`, the PutObject or ledger error (the
 *   object was then compensated, or the ledger keeps it for reconciliation).
 */
export async function writeResultObject(input: WriteResultObjectInput): Promise<WrittenResultObject> {
  const { s3, store, ...fields } = input;
  const parsed = parseOrThrow(WriteResultObjectSchema, fields, 'input');
  const key = resultObjectKey(parsed.operationId);
  const ref = objectRef(parsed.bucket, key);
  const bodyDigest = `sha256:${sha256Hex(parsed.body)}`;
  const bytes = Buffer.byteLength(parsed.body, 'utf8');
  const handle = await beginDurableRecoveryOperation(store, {
    module: RESULT_OBJECTS_MODULE,
    kind: PUT_OBJECT_KIND,
    idempotencyKey: `result:${parsed.operationId}:${parsed.writeKey}`,
    request: { objectRef: ref, bodyDigest, bytes },
    effectClass: 'compensatable',
    recoveryPlan: { undo: 'delete_object', objectRef: ref },
    preconditionEvidence: { objectExisted: (await headResultObject(s3, parsed.bucket, key)) !== undefined },
    leaseOwner: parsed.leaseOwner,
    leaseMs: parsed.leaseMs,
  });
  try {
    let etag: string;
    try {
      const put = await s3.send(
        new PutObjectCommand({
          Bucket: parsed.bucket,
          Key: key,
          Body: parsed.body,
          ContentType: 'application/json',
          Metadata: { [WRITER_METADATA_KEY]: handle.operationId },
        }),
      );
      etag = bareEtag(put.ETag);
    } catch (error) {
      if (!isProviderRefusal(error)) throw error;
      const result = providerResult(error);
      await handle.reject({ objectRef: ref, ...result });
      throw new ResultObjectRejectedError(handle.operationId, result.resultCode);
    }
    await handle.checkpoint('object_written', { etag, bytes, bodyDigest });
    return { handle, bucket: parsed.bucket, key, etag, bytes, bodyDigest };
  } catch (error) {
    if (!(error instanceof ResultObjectRejectedError)) {
      // The object may exist: undo it now. If that fails too, the ledger keeps the operation for reconciliation.
      await compensateResultObject({ s3, store, handle, reason: 'write_interrupted' }).catch(() => undefined);
    }
    throw error;
  }
}
