import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { importOptionalPeer } from '../optional-peer.js';
import { createSqsClient } from '../queue/wakeup-sender.js';
import { createS3Client } from '../results/s3-client.js';

/** Options of {@link startLocalQueue}. */
export interface LocalQueueOptions {
  /** TCP port on 127.0.0.1; `0` picks a free one (tests). @default 0 */
  port?: number;
  /** Name of the main (wake-up) queue. @default 'durable-ops-wakeup' */
  queueName?: string;
  /** Name of the dead-letter queue. @default `${queueName}-dlq` */
  dlqName?: string;
  /**
   * Receives after which a message moves to the DLQ on its next receive (the SQS `RedrivePolicy`
   * `maxReceiveCount`, 1–1000). Matches serverless.yml. @default 5
   */
  maxReceiveCount?: number;
  /** The main queue's `VisibilityTimeout`, in **seconds** (0–43200). @default 30 (the SQS default) */
  visibilityTimeoutSeconds?: number;
  /** Region the client signs with; fauxqs puts it into queue ARNs. @default 'us-east-1' */
  region?: string;
  /** S3 buckets to create in the same emulator (fauxqs serves S3 on {@link LocalQueue.endpoint} too). @default none */
  buckets?: readonly string[];
}

/** A running in-process SQS (and S3) emulator with the worker queue, its DLQ and any requested buckets. */
export interface LocalQueue {
  /** Base URL of the emulator, e.g. `http://127.0.0.1:41234`; give it to any SQS or S3 client as `endpoint`. */
  readonly endpoint: string;
  /** URL of the main queue exactly as fauxqs issued it (fauxqs looks queues up by that exact string). */
  readonly queueUrl: string;
  /** URL of the dead-letter queue exactly as fauxqs issued it. */
  readonly dlqUrl: string;
  /** A client pinned to {@link endpoint}; destroyed by {@link stop}. */
  readonly client: SQSClient;
  /** Closes every connection (including pending long polls) and stops the emulator; all messages are lost. */
  stop(): Promise<void>;
}

/**
 * Starts fauxqs in this process, listening on **127.0.0.1 only** (its `startFauxqs` helper binds 0.0.0.0,
 * which would expose an unauthenticated queue to the network), then creates a DLQ and a main queue whose
 * `RedrivePolicy` sends a message to the DLQ once it has been received `maxReceiveCount` times without being
 * deleted — as SQS does — and the requested S3 buckets. State is in memory only: the database, not the queue,
 * holds the work (docs/design.md §1).
 *
 * fauxqs is an optional peer dependency of the package, loaded (dynamic import) only here, when the local queue starts.
 * @throws {OptionalDependencyMissingError} when `fauxqs` is not installed.
 * @throws {Error} when the port is taken or a queue or bucket cannot be created; the emulator is stopped first.
 */
export async function startLocalQueue(options: LocalQueueOptions = {}): Promise<LocalQueue> {
  const queueName = options.queueName ?? 'durable-ops-wakeup';
  const { buildApp } = await importOptionalPeer('fauxqs', 'The local queue', () => import('fauxqs'));
  const app = buildApp({ logger: false });
  await app.listen({ port: options.port ?? 0, host: '127.0.0.1' });
  const address = app.server.address();
  if (address === null || typeof address === 'string') {
    await app.close();
    throw new Error('fauxqs did not report a TCP address.');
  }
  const endpoint = `http://127.0.0.1:${address.port}`;
  const client = createSqsClient({ region: options.region ?? 'us-east-1', endpoint });
  const stop = async (): Promise<void> => {
    client.destroy();
    await app.close();
  };
  try {
    const dlqUrl = await createQueue(client, options.dlqName ?? `${queueName}-dlq`, {});
    const dlqArn = await queueArn(client, dlqUrl);
    const queueUrl = await createQueue(client, queueName, {
      VisibilityTimeout: String(options.visibilityTimeoutSeconds ?? 30),
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: options.maxReceiveCount ?? 5 }),
    });
    await createBuckets(endpoint, options.region ?? 'us-east-1', options.buckets ?? []);
    return { endpoint, queueUrl, dlqUrl, client, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function createQueue(client: SQSClient, name: string, attributes: Record<string, string>): Promise<string> {
  const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  if (!QueueUrl) throw new Error(`fauxqs returned no URL for queue "${name}".`);
  return QueueUrl;
}

async function queueArn(client: SQSClient, queueUrl: string): Promise<string> {
  const { Attributes } = await client.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }));
  const arn = Attributes?.QueueArn;
  if (!arn) throw new Error(`fauxqs returned no ARN for ${queueUrl}.`);
  return arn;
}

async function createBuckets(endpoint: string, region: string, buckets: readonly string[]): Promise<void> {
  if (buckets.length === 0) return;
  const s3 = createS3Client({ region, endpoint });
  try {
    for (const bucket of buckets) await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  } finally {
    s3.destroy();
  }
}
