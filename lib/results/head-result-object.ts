import { HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { isProviderNotFound } from '../aws/provider-fault.js';
import { bareEtag, WRITER_METADATA_KEY } from './result-object-ledger.js';

/** What HeadObject says about a result object. */
export interface ResultObjectHead {
  /** ETag without quotes. */
  readonly etag: string;
  /** `Content-Length`, in bytes. */
  readonly bytes: number;
  /** The ledger operation that wrote it (`x-amz-meta-recovery-operation`), or `null` when it carries none. */
  readonly writer: string | null;
}

/**
 * HeadObject on a result object (AWS S3 API reference, HeadObject): its ETag, size and writer, or `undefined` when S3
 * answers 404. S3 answers a missing key with 404 only to a caller allowed `s3:ListBucket` on the bucket — without it,
 * 403 (same page, "Permissions") — so the worker role needs `s3:ListBucket` as well as `s3:GetObject`.
 * @throws any other S3 error (a 403 included).
 */
export async function headResultObject(s3: S3Client, bucket: string, key: string): Promise<ResultObjectHead | undefined> {
  try {
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    return { etag: bareEtag(head.ETag), bytes: head.ContentLength ?? 0, writer: head.Metadata?.[WRITER_METADATA_KEY] ?? null };
  } catch (error) {
    if (isProviderNotFound(error)) return undefined;
    throw error;
  }
}
