import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SendMessageBatchCommand, SendMessageBatchCommandOutput, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSMessageAttributes, SQSRecord } from 'aws-lambda';
import {
  createApiHandler,
  createRecoveryModules,
  createWorkerHandler,
  flushTracesMiddleware,
  noopMetrics,
  openStore,
  SqsWakeupSender,
  TaskRegistry,
  type ApiHandler,
  type CapacityPolicy,
  type Logger,
  type Observability,
  type Store,
  type Tracing,
} from '../lib/index.js';
import { localLambdaContext } from '../lib/local/lambda-context.js';
import { toApiGatewayEvent } from '../lib/local/local-api-event.js';
import { BENCH_SUBJECT_TYPE, BENCH_TASK_TYPE, benchOwner, benchPolicy, benchTask, ExecutionLog } from './durable-ops-deps.js';
import { prepareBenchStores } from './durable-ops-rig.js';
import { WakeupQueue } from './wakeup-queue.js';

/** The queue ARN the stand-in's records carry (`eventSourceARN`). */
const QUEUE_ARN = 'arn:aws:sqs:us-east-1:000000000000:durable-ops-bench';

/**
 * SQS (an external service) in process, for {@link SqsWakeupSender}: an `SQSClient` stand-in whose `send` accepts the
 * sender's `SendMessageBatchCommand` and turns each entry into the record Lambda's SQS event source would deliver —
 * body and message attributes (`traceparent` / `tracestate` included) as `lib/local/sqs-poller.ts` maps them — after
 * the entry's `DelaySeconds`. Every other command is refused.
 */
class InProcessSqs {
  readonly records = new WakeupQueue<SQSRecord>();
  /** Messages sent so far. */
  sent = 0;
  readonly client = { send: (command: SendMessageBatchCommand) => this.#sendBatch(command) } as unknown as SQSClient;

  async #sendBatch(command: SendMessageBatchCommand): Promise<SendMessageBatchCommandOutput> {
    const entries = command.input?.Entries;
    if (!Array.isArray(entries)) throw new Error('the in-process SQS stand-in only takes SendMessageBatch');
    this.sent += entries.length;
    for (const entry of entries) {
      const messageAttributes: SQSMessageAttributes = {};
      for (const [name, value] of Object.entries(entry.MessageAttributes ?? {})) {
        messageAttributes[name] = { dataType: value.DataType ?? 'String', stringValue: value.StringValue, stringListValues: [], binaryListValues: [] };
      }
      const record = sqsRecord(entry.MessageBody ?? '', messageAttributes);
      if (entry.DelaySeconds) setTimeout(() => this.records.push(record), entry.DelaySeconds * 1000).unref();
      else this.records.push(record);
    }
    return { Successful: entries.map((e) => ({ Id: e.Id, MessageId: randomUUID(), MD5OfMessageBody: '' })), Failed: [], $metadata: {} };
  }
}

function sqsRecord(body: string, messageAttributes: SQSMessageAttributes): SQSRecord {
  const messageId = randomUUID();
  const now = String(Date.now());
  return {
    messageId,
    receiptHandle: messageId,
    body,
    attributes: { ApproximateReceiveCount: '1', SentTimestamp: now, SenderId: 'bench', ApproximateFirstReceiveTimestamp: now },
    messageAttributes,
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: QUEUE_ARN,
    awsRegion: 'us-east-1',
  };
}

/** Options of {@link HandlerPathRig.open}. */
export interface HandlerPathRigOptions {
  /** A migrated-or-empty benchmark database (`mysql://…/durable_ops_bench_<pid>…`); it is migrated here. */
  readonly databaseUrl: string;
  readonly owners: number;
  /** Concurrent API callers, and connections of the API's pool. */
  readonly admitters: number;
  /** Concurrent worker invocations, and connections of the worker pool. */
  readonly workers: number;
  /** Records one worker invocation receives at most (the event source mapping's `batchSize`). */
  readonly sqsBatchSize: number;
  readonly capacity: CapacityPolicy;
  /** The process's tracing (`startTracing`): flushed after every invocation, as the deployed functions do. */
  readonly tracing: Tracing;
}

/**
 * durable-ops driven through its Lambda handlers, for the tracing-cost phase: every admission is a `POST
 * /api/operations` event (`toApiGatewayEvent`, as the local server builds it) to `createApiHandler`; every wake-up goes
 * through `SqsWakeupSender` into an in-process SQS stand-in; workers call `createWorkerHandler` with SQS events of up
 * to `sqsBatchSize` records and put back the records it reports failed. Both handlers get one middleware,
 * `flushTracesMiddleware` — the one of the production observability that tracing adds — so an arm with tracing pays the
 * per-invocation flush too. Unlike {@link DurableOpsRig} (which calls `admitOperation` and `processWakeup` directly),
 * this path passes through every span of an operation: the API's SERVER span, `admission`, `wakeup publish`,
 * `wakeup process`, `claim`, `attempt`, `completion`. Logs go nowhere (warnings and errors are kept), metrics nowhere.
 */
export class HandlerPathRig {
  readonly executions = new ExecutionLog();
  /** Warnings and errors the handlers logged. */
  readonly warnings: string[] = [];
  /** API answers other than 200 / 202 / 429, and thrown calls, that were retried. */
  readonly errors: string[] = [];
  capacityRejections = 0;
  /** Operations the workers ran to `succeeded` (their `operation_succeeded` line). */
  succeeded = 0;
  /** `performance.now()` of the last `operation_succeeded` line. */
  lastSucceededAt = 0;
  readonly sqs = new InProcessSqs();
  readonly #options: HandlerPathRigOptions;
  readonly #apiStore: Store;
  readonly #workerStore: Store;
  readonly #api: ApiHandler;
  readonly #worker: ReturnType<typeof createWorkerHandler>;

  private constructor(options: HandlerPathRigOptions) {
    this.#options = options;
    const logger: Logger = {
      debug: () => {},
      info: (_message, context) => {
        if (context?.event !== 'operation_succeeded') return;
        this.succeeded++;
        this.lastSucceededAt = performance.now();
      },
      warn: (message) => void this.warnings.push(message),
      error: (message) => void this.warnings.push(message),
    };
    const registry = new TaskRegistry().register(benchTask((operationId, phase) => phase === 'start' && this.executions.record(operationId)));
    const policy = benchPolicy();
    const wakeups = new SqsWakeupSender({ client: this.sqs.client, queueUrl: 'http://sqs.bench.local/000000000000/durable-ops-bench' });
    const metrics = noopMetrics;
    const observability: Observability = { logger, metrics: { ...metrics, publish: () => {} }, middlewares: [flushTracesMiddleware(options.tracing)] };
    this.#apiStore = openStore(options.databaseUrl, { poolSize: options.admitters });
    this.#workerStore = openStore(options.databaseUrl, { poolSize: options.workers });
    const common = { registry, policy, wakeups, logger, metrics, capacity: options.capacity };
    // No operator rule: the bench calls owner routes only.
    this.#api = createApiHandler({ ...common, store: this.#apiStore, recoveryModules: createRecoveryModules(), operatorRule: undefined }, observability);
    this.#worker = createWorkerHandler({ ...common, store: this.#workerStore }, observability);
  }

  /** Opens both pools and readies the database (`prepareBenchStores`). */
  static async open(options: HandlerPathRigOptions): Promise<HandlerPathRig> {
    const rig = new HandlerPathRig(options);
    try {
      await prepareBenchStores(rig.#apiStore, rig.#workerStore, options);
      return rig;
    } catch (error) {
      await rig.close();
      throw error;
    }
  }

  /**
   * `POST /api/operations` for operation `i` (key `bench-<i>`, owner `i mod owners`) as a client would: a 429 is
   * retried after 5 ms (counted), any other failure up to three times (a client retrying with the same key).
   * @returns the operation id.
   * @throws {Error} with the status and body of the fourth failed try.
   */
  async admit(i: number): Promise<string> {
    const body = JSON.stringify({ taskType: BENCH_TASK_TYPE, subject: { type: BENCH_SUBJECT_TYPE, id: `s-${i}` }, params: { i } });
    const claims = { sub: benchOwner(i % this.#options.owners), exp: Math.floor(Date.now() / 1000) + 3600 };
    for (let tries = 0; ; tries++) {
      const event = toApiGatewayEvent(
        {
          method: 'POST',
          target: '/api/operations',
          headers: { host: 'api.bench.local', 'content-type': 'application/json', 'idempotency-key': `bench-${i}` },
          body,
          sourceIp: '127.0.0.1',
          requestId: randomUUID(),
          receivedAt: new Date(),
        },
        claims,
      );
      const result = await this.#api(event, localLambdaContext({ functionName: 'durable-ops-bench-api', timeoutMs: 30_000 }));
      if (result.statusCode === 200 || result.statusCode === 202) return (JSON.parse(result.body ?? '{}') as { id: string }).id;
      if (result.statusCode === 429) this.capacityRejections++;
      else {
        const failure = `POST /api/operations answered ${result.statusCode}: ${result.body ?? ''}`;
        if (tries >= 3) throw new Error(failure);
        this.errors.push(failure);
      }
      await sleep(5);
    }
  }

  /**
   * Runs `workers` concurrent workers until {@link succeeded} reaches `target()` or the deadline (`performance.now()`)
   * passes: each takes up to `sqsBatchSize` waiting records and invokes the worker handler with them; records it
   * reports failed are put back (SQS would redeliver them). Once `admissionDone()`, an empty receive invokes it with
   * one `sweeper` wake-up, as the sweeper's re-send would, for operations whose wake-up was spent while they waited.
   */
  async work(target: () => number, admissionDone: () => boolean, deadline: number): Promise<void> {
    const sweeperBody = JSON.stringify({ v: 1, reason: 'sweeper' });
    const worker = async () => {
      while (this.succeeded < target() && performance.now() < deadline) {
        const records = await this.sqs.records.takeBatch(this.#options.sqsBatchSize, 50);
        if (records.length === 0 && !admissionDone()) continue;
        const batch = records.length > 0 ? records : [sqsRecord(sweeperBody, {})];
        const context = localLambdaContext({ functionName: 'durable-ops-bench-worker', timeoutMs: 900_000 });
        const response = (await this.#worker({ Records: batch }, context)) as SQSBatchResponse | undefined;
        const failed = new Set((response?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
        for (const record of batch) if (failed.has(record.messageId) && record.body !== sweeperBody) this.sqs.records.push(record);
        if (failed.size > 0) this.errors.push(`${failed.size} wake-up records failed and were put back`);
      }
    };
    await Promise.all(Array.from({ length: this.#options.workers }, worker));
  }

  /** Operations in `succeeded` in the database. */
  async succeededRows(): Promise<number> {
    const row = await this.#workerStore.db
      .selectFrom('operations')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', '=', 'succeeded')
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Closes both pools. */
  async close(): Promise<void> {
    await this.#apiStore.destroy();
    await this.#workerStore.destroy();
  }
}
