import type { S3Client } from '@aws-sdk/client-s3';
import type { Store } from '../db/store.js';

/**
 * What a task needs to publish a result object through the recovery ledger: the seam between the worker and S3.
 * Built by `createRuntime` only when `RESULTS_BUCKET` is configured and handed to tasks as `TaskContext.results`;
 * absent otherwise, so a task must treat result objects as optional.
 */
export interface ResultObjects {
  /** The process's S3 client (see `createS3Client`). */
  readonly s3: S3Client;
  /** The bucket result objects go to (`RESULTS_BUCKET`). */
  readonly bucket: string;
  /** The store holding the recovery ledger. */
  readonly store: Store;
}
