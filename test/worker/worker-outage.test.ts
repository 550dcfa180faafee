import { describe, expect, it } from 'vitest';
import { openStore } from '../../lib/db/store.js';
import { createWorkerHandler } from '../../lib/worker/worker-handler.js';
import { testDeps } from '../support/fixtures.js';
import { freePort } from '../support/free-port.js';
import { RecordingLogger } from '../support/recording-observability.js';
import { lambdaContext, wakeupEvent } from '../support/sqs-events.js';

describe('the worker during a database outage', () => {
  it('a claim that finds the database refusing connections reports its record as a batch item failure, logged once at WARN with the code, no ERROR', async () => {
    const store = openStore(`mysql://root@127.0.0.1:${await freePort()}/nowhere`, { poolSize: 1 });
    try {
      const logger = new RecordingLogger();
      const handler = createWorkerHandler({ ...testDeps(), logger, store });
      const event = wakeupEvent(2);
      const result = await handler(event, lambdaContext());
      expect(result).toEqual({ batchItemFailures: event.Records.map((record) => ({ itemIdentifier: record.messageId })) });
      expect(logger.lines.filter((line) => line.level === 'ERROR')).toEqual([]);
      const warned = logger.lines.filter((line) => line.level === 'WARN');
      expect(warned.map((line) => line.fields)).toEqual(
        event.Records.map((record) => ({ messageId: record.messageId, code: 'database_unavailable', reason: 'ECONNREFUSED' })),
      );
      expect(warned[0]?.message).toBe('wake-up failed: the database is unavailable; SQS will redeliver it');
    } finally {
      await store.destroy();
    }
  });
});
