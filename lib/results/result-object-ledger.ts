import { z } from 'zod';

/**
 * The recovery-ledger vocabulary of result objects (docs/design.md §8): one `results.s3` / `put_object` operation per write,
 * effect class `compensatable` (undo: delete the object).
 */
export const RESULT_OBJECTS_MODULE = 'results.s3';

/** The ledger `kind` of a result-object write. */
export const PUT_OBJECT_KIND = 'put_object';

/**
 * The S3 user-metadata key (sent as `x-amz-meta-recovery-operation`) naming the ledger operation that wrote an
 * object. Compensation deletes an object only while it still carries its own operation id, so undoing one attempt
 * never deletes a later attempt's object at the same key.
 */
export const WRITER_METADATA_KEY = 'recovery-operation';

/** The S3 key of an operation's result object: `results/<operationId>.json`. */
export function resultObjectKey(operationId: string): string {
  return `results/${operationId}.json`;
}

/** An opaque object reference for evidence: `s3://<bucket>/<key>`. */
export function objectRef(bucket: string, key: string): string {
  return `s3://${bucket}/${key}`;
}

/** The recovery plan a result-object write commits before it acts; compensation reads the object from it. */
export const ResultObjectPlanSchema = z.strictObject({
  undo: z.literal('delete_object'),
  objectRef: z.string().regex(/^s3:\/\/[a-z0-9.-]{3,63}\/.{1,1024}$/),
});

/** Splits an `s3://bucket/key` reference. */
export function parseObjectRef(ref: string): { bucket: string; key: string } {
  const rest = ref.slice('s3://'.length);
  const slash = rest.indexOf('/');
  return { bucket: rest.slice(0, slash), key: rest.slice(slash + 1) };
}

/** An S3 ETag without its surrounding quotes (S3 returns `"<hex>"`). */
export function bareEtag(etag: string | undefined): string {
  return (etag ?? '').replace(/^"|"$/g, '');
}
