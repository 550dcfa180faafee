import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { strategySnapshotTask } from '../../lib/features/strategy-snapshot/strategy-snapshot-task.js';
import { TaskRegistry } from '../../lib/tasks/task-registry.js';
import type { WorkerDeps } from '../../lib/worker/worker-handler.js';
import { createApiTestApp, type ApiTestApp } from '../http/api-test-app.js';
import { startAiRig, type AiRig } from '../support/ai-rig.js';
import type { TestDialect } from '../support/test-store.js';

/** What a strategy-snapshot suite drives: the real API over a test database, fake model servers, and a worker. */
export interface SnapshotSuite {
  app: ApiTestApp;
  rig: AiRig;
  /** Worker deps whose registry holds `strategy.snapshot` only, with the rig's model routes. */
  worker: WorkerDeps;
}

/**
 * Registers the hooks of a strategy-snapshot suite and returns its state, filled in by them: one API app per suite
 * (with `strategy.snapshot` registered), and per test an empty queue — so the worker only ever claims that test's
 * operation — and fresh fake model servers whose local route answers `answer` as JSON.
 */
export function useSnapshotSuite(dialect: TestDialect, skip: boolean, answer: unknown): SnapshotSuite {
  const suite = {} as SnapshotSuite;
  beforeAll(async () => {
    if (skip) return;
    suite.app = await createApiTestApp(dialect);
    suite.app.deps.registry.register(strategySnapshotTask);
  });
  afterAll(async () => suite.app?.drop());
  beforeEach(async () => {
    if (skip) return;
    for (const table of ['capacity_slots', 'owner_capacity', 'operation_notifications', 'operation_key_aliases', 'operations', 'ai_workspace_notes'] as const) {
      await suite.app.db.store.db.deleteFrom(table).execute();
    }
    suite.rig = await startAiRig(suite.app.db.store);
    suite.rig.local.respondWith(JSON.stringify(answer));
    suite.worker = { ...suite.rig.deps, registry: new TaskRegistry().register(strategySnapshotTask) };
  });
  afterEach(async () => suite.rig?.close());
  return suite;
}
