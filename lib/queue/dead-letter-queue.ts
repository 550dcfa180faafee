import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Config } from '../config.js';
import { createSqsClient } from './wakeup-sender.js';

/** The worker queue's dead-letter queue, for the operator's redrive: a client, the DLQ and the main queue it feeds. */
export interface DeadLetterQueue {
  readonly client: SQSClient;
  /** `SQS_DLQ_URL`, exactly as SQS (or fauxqs) issued it. */
  readonly dlqUrl: string;
  /** `SQS_QUEUE_URL`: where redriven messages go. */
  readonly queueUrl: string;
}

/**
 * The configured dead-letter queue: `SQS_DLQ_URL` and `SQS_QUEUE_URL` with a client of its own (targeting `SQS_ENDPOINT`
 * when set, as the runtime's), or undefined when either URL is unset. Destroy the client when done.
 */
export function deadLetterQueueFromConfig(config: Config): DeadLetterQueue | undefined {
  if (!config.SQS_DLQ_URL || !config.SQS_QUEUE_URL) return undefined;
  const client = createSqsClient({ region: config.AWS_REGION, ...(config.SQS_ENDPOINT ? { endpoint: config.SQS_ENDPOINT } : {}) });
  return { client, dlqUrl: config.SQS_DLQ_URL, queueUrl: config.SQS_QUEUE_URL };
}
