import { z } from 'zod';
import { loadCapacityPolicy, type CapacityPolicy } from '../../lib/capacity/capacity-policy.js';
import { loadConfig } from '../../lib/config.js';
import { createApiHandler, type ApiDeps, type ApiHandler } from '../../lib/http/api-handler.js';
import { operatorRuleFromConfig } from '../../lib/http/operator-identity.js';
import { withLocalOperatorRule } from '../../lib/local/dev-operator.js';
import { silentLogger, type Logger } from '../../lib/logger.js';
import { noopMetrics } from '../../lib/observability/metrics.js';
import { claimNextOperation, enterOwnerScope, type ClaimedOperation } from '../../lib/operations/lease/claim-operation.js';
import { policyFromConfig } from '../../lib/operations/operation-policy.js';
import { WorkerScope, type OwnerScope } from '../../lib/operations/scopes.js';
import type { DeadLetterQueue } from '../../lib/queue/dead-letter-queue.js';
import type { WakeupMessage } from '../../lib/queue/wakeup-message.js';
import type { WakeupSender } from '../../lib/queue/wakeup-sender.js';
import { createRecoveryModules, type RecoveryModuleRegistry } from '../../lib/recovery/recovery-modules.js';
import { demoWaitTask } from '../../lib/tasks/demo-wait.js';
import { defineTask } from '../../lib/tasks/task-definition.js';
import { TaskRegistry } from '../../lib/tasks/task-registry.js';
import { apiEvent, lambdaContext, parseResponse, type ApiEventInput, type ParsedResponse } from '../support/api-events.js';
import { createTestDatabase, type TestDialect, type TestDatabase } from '../support/test-store.js';

/** A task type only these tests admit and claim, so a claim never picks another test's `demo.wait` row. */
const claimableTask = defineTask({
  type: 'test.claimable',
  paramsSchema: z.strictObject({}),
  timeoutMs: 1_000,
  async run() {},
});

/** The SQS boundary, faked: records what admission and retry sent. */
export class RecordingWakeups implements WakeupSender {
  readonly sent: WakeupMessage[] = [];
  async send(messages: readonly WakeupMessage[]): Promise<void> {
    this.sent.push(...messages);
  }
}

/** The real API handler over a real, migrated test database. */
export interface ApiTestApp {
  readonly db: TestDatabase;
  readonly deps: ApiDeps;
  readonly wakeups: RecordingWakeups;
  readonly handler: ApiHandler;
  /** Calls the handler with an event built from `input`. */
  call(input: ApiEventInput): Promise<ParsedResponse>;
  /**
   * Admits a `test.claimable` operation for `owner` and claims it as a worker would; returns the claim (it holds the
   * lease token) and the owner scope the worker re-enters.
   */
  admitAndClaim(owner: string, key: string): Promise<{ operationId: string; claim: ClaimedOperation; scope: OwnerScope }>;
  /** Admits a 10 ms `demo.wait` for `owner` under `key` (subject `document/<key>`); returns its id. Throws unless 202. */
  admitWait(owner: string, key: string): Promise<string>;
  /** Rows in `operations` for `owner`. */
  countOperations(owner: string): Promise<number>;
  drop(): Promise<void>;
}

/** Options of {@link createApiTestApp}. */
export interface ApiTestAppOptions {
  /** Admission limits. @default the environment defaults (`CAPACITY_PER_OWNER` 10, `CAPACITY_GLOBAL` 1000) */
  readonly capacity?: CapacityPolicy;
  /** The recovery ledger's modules and their reconciliation actions. @default `createRecoveryModules()` */
  readonly recoveryModules?: RecoveryModuleRegistry;
  /** The dead-letter queue the operator's redrive uses. @default none */
  readonly deadLetters?: DeadLetterQueue;
  /** Where the services log (a `RecordingLogger` to assert lines). @default silent */
  readonly logger?: Logger;
}

/** Builds an {@link ApiTestApp} on a fresh database of `dialect`. */
export async function createApiTestApp(dialect: TestDialect, options: ApiTestAppOptions = {}): Promise<ApiTestApp> {
  const db = await createTestDatabase(dialect);
  const wakeups = new RecordingWakeups();
  const registry = new TaskRegistry().register(demoWaitTask).register(claimableTask);
  const config = loadConfig({});
  const deps: ApiDeps = {
    store: db.store,
    registry,
    policy: policyFromConfig(config),
    capacity: options.capacity ?? loadCapacityPolicy(config),
    wakeups,
    recoveryModules: options.recoveryModules ?? createRecoveryModules(),
    ...(options.deadLetters ? { deadLetters: options.deadLetters } : {}),
    logger: options.logger ?? silentLogger,
    metrics: noopMetrics,
    // The local stack's rule: an event with an `ops:` scope carries its group (test/support/api-events.ts).
    operatorRule: operatorRuleFromConfig(withLocalOperatorRule(config)),
  };
  const handler = createApiHandler(deps);
  const call = async (input: ApiEventInput) => parseResponse(await handler(apiEvent(input), lambdaContext()));
  return {
    db,
    deps,
    wakeups,
    handler,
    call,
    async admitAndClaim(owner, key) {
      const admitted = await call({
        method: 'POST',
        path: '/api/operations',
        owner,
        headers: { 'idempotency-key': key },
        body: { taskType: 'test.claimable', subject: { type: 'doc', id: 'doc-1' } },
      });
      if (admitted.status !== 202) throw new Error(`admission failed: ${admitted.text}`);
      const worker = new WorkerScope(db.store);
      const claim = await claimNextOperation(worker, { registry: new TaskRegistry().register(claimableTask), policy: deps.policy, capacity: deps.capacity });
      if (!claim || claim.operationId !== admitted.json.id) throw new Error('the claim did not take the operation just admitted');
      return { operationId: claim.operationId, claim, scope: enterOwnerScope(worker, claim) };
    },
    async admitWait(owner, key) {
      const admitted = await call({
        method: 'POST',
        path: '/api/operations',
        owner,
        headers: { 'idempotency-key': key },
        body: { taskType: 'demo.wait', subject: { type: 'document', id: key }, params: { durationMs: 10 } },
      });
      if (admitted.status !== 202) throw new Error(`admission failed (${admitted.status}): ${admitted.text}`);
      return admitted.json.id as string;
    },
    async countOperations(owner) {
      const row = await db.store.db
        .selectFrom('operations')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('owner_user_id', '=', owner)
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
    drop: () => db.drop(),
  };
}
