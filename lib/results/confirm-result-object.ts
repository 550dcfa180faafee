import type { S3Client } from '@aws-sdk/client-s3';
import { headResultObject } from './head-result-object.js';
import { ResultObjectMismatchError } from './result-errors.js';
import { objectRef } from './result-object-ledger.js';
import type { WrittenResultObject } from './write-result-object.js';

/**
 * Confirms a written result object: verifies with HeadObject that the object is still the one this write put there
 * (same ETag, size and writer metadata) and completes its ledger operation with both checks — `object_written` (what
 * PutObject returned) and `object_head` (what S3 serves now) — so it ends `succeeded` (docs/design.md §8: completion needs
 * concrete verification and a valid chain). Call it only once the caller's run stands; until then the write can
 * still be compensated.
 * @throws {ResultObjectMismatchError} the object is gone or is not this write's (the operation stays `running`:
 *   compensate it).
 * @throws {import('../recovery/recovery-errors.js').StaleFenceError | import('../recovery/recovery-errors.js').ChainBrokenError}
 *   from the ledger; nothing written.
 */
export async function confirmResultObject(s3: S3Client, written: WrittenResultObject): Promise<void> {
  const head = await headResultObject(s3, written.bucket, written.key);
  if (head === undefined || head.etag !== written.etag || head.bytes !== written.bytes || head.writer !== written.handle.operationId) {
    throw new ResultObjectMismatchError(written.handle.operationId);
  }
  await written.handle.complete({
    checks: [
      { name: 'object_written', evidence: { etag: written.etag, bytes: written.bytes, bodyDigest: written.bodyDigest } },
      { name: 'object_head', evidence: { objectRef: objectRef(written.bucket, written.key), headStatus: 'HTTP_200', etag: head.etag, bytes: head.bytes } },
    ],
  });
}
