import { S3Client } from '@aws-sdk/client-s3';

/** Options of {@link createS3Client}. */
export interface CreateS3ClientOptions {
  /** AWS region, e.g. `eu-west-1`. */
  region: string;
  /**
   * Explicit S3 endpoint, e.g. the fauxqs URL `http://127.0.0.1:4566` (fauxqs serves SQS and S3 on one port).
   * Unset in AWS.
   */
  endpoint?: string;
}

/**
 * Builds the one `S3Client` a process uses for result objects. In AWS (no endpoint) credentials come from the default
 * provider chain (the Lambda role). With an endpoint (local emulator) it uses path-style URLs
 * (`http://host/bucket/key`: fauxqs README, "S3 URL styles", option 4 — virtual-hosted names such as
 * `bucket.s3.localhost` do not resolve here) and dummy static credentials, so no real ones are looked up or sent.
 */
export function createS3Client(options: CreateS3ClientOptions): S3Client {
  if (options.endpoint === undefined) return new S3Client({ region: options.region });
  return new S3Client({
    region: options.region,
    endpoint: options.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
}
