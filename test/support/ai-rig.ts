import { z } from 'zod';
import { createModelRoutes, type ModelRoutes } from '../../lib/ai/model-routes.js';
import { loadConfig } from '../../lib/config.js';
import type { Store } from '../../lib/db/store.js';
import { defineTask } from '../../lib/tasks/task-definition.js';
import type { WorkerDeps } from '../../lib/worker/worker-handler.js';
import { startFakeModelServer, type FakeModelServer } from './fake-model-server.js';
import { testDeps, testRegistry } from './fixtures.js';

/** The external route's API key in these tests: it must reach the external server's header, and nothing else. */
export const EXTERNAL_KEY = 'sk-test-EXTERNAL-KEY-0123456789abcdef';

/** A marker inside every prompt the test tasks send, to prove prompts are never stored or logged. */
export const PROMPT_MARKER = 'PROMPT-MARKER-7f3a';

/** The answer schema of the test model tasks. */
export const AnswerSchema = z.strictObject({ answer: z.string().min(1).max(100) });

/** A valid answer whose text is a marker, to prove model output is never stored in operations or logged. */
export const OUTPUT_MARKER = 'OUTPUT-MARKER-9c2e';
export const VALID_ANSWER = JSON.stringify({ answer: OUTPUT_MARKER });

function modelTask(type: string, externalAllowed: boolean, entitlement?: { aiEnabled: boolean }) {
  return defineTask({
    type,
    paramsSchema: z.strictObject({}),
    ...(entitlement ? { entitlement } : {}),
    timeoutMs: 3_000,
    leaseSeconds: 6,
    model: { externalAllowed },
    async run({ model }) {
      if (!model) throw new Error('no model session');
      await model.requestStructured({ messages: [{ role: 'user', content: `Say hi. ${PROMPT_MARKER}` }], schema: AnswerSchema, schemaName: 'answer' });
    },
  });
}

/** A model task on the external allowlist. */
export const allowListedTask = modelTask('test.ai-fallback', true);
/** A model task that must stay on local routes (like `strategy.snapshot`). */
export const localOnlyTask = modelTask('test.ai-local', false);
/** A local model task that needs `aiEnabled` (its run can end before any model call). */
export const entitledTask = modelTask('test.ai-entitled', false, { aiEnabled: true });

/** What an AI test drives: a local and an external fake model server, the routes over them, a breaker clock and worker deps. */
export interface AiRig {
  readonly local: FakeModelServer;
  readonly external: FakeModelServer;
  readonly models: ModelRoutes;
  readonly deps: WorkerDeps & ReturnType<typeof testDeps>;
  /** Moves the circuit breakers' clock forward, in ms. */
  advanceBreakerClock(ms: number): void;
  close(): Promise<void>;
}

/** Options of {@link startAiRig}: breaker threshold, cool-down (s) and request timeout (ms) as the env would set them. */
export interface AiRigOptions {
  readonly breakerFailures?: number;
  readonly cooldownSeconds?: number;
  readonly requestTimeoutMs?: number;
  readonly env?: Record<string, string>;
}

/** Starts two fake model servers and builds worker deps whose model routes point at them. */
export async function startAiRig(store: Store, options: AiRigOptions = {}): Promise<AiRig> {
  const local = await startFakeModelServer();
  const external = await startFakeModelServer();
  local.respondWith(VALID_ANSWER);
  external.respondWith(VALID_ANSWER);
  let breakerNow = Date.now();
  const config = loadConfig({
    MODEL_LOCAL_URL: local.url,
    MODEL_LOCAL_NAME: 'local-test-model',
    MODEL_EXTERNAL_URL: external.url,
    MODEL_EXTERNAL_NAME: 'external-test-model',
    MODEL_EXTERNAL_API_KEY: EXTERNAL_KEY,
    MODEL_BREAKER_FAILURES: String(options.breakerFailures ?? 5),
    MODEL_BREAKER_COOLDOWN_SECONDS: String(options.cooldownSeconds ?? 30),
    MODEL_REQUEST_TIMEOUT_MS: String(options.requestTimeoutMs ?? 2_000),
    ...options.env,
  });
  const models = createModelRoutes(config, { now: () => breakerNow });
  const registry = testRegistry().register(allowListedTask).register(localOnlyTask).register(entitledTask);
  const deps = { ...testDeps({ heartbeatMs: 100 }), registry, models, store };
  return {
    local,
    external,
    models,
    deps,
    advanceBreakerClock: (ms) => {
      breakerNow += ms;
    },
    close: async () => {
      models.close();
      await Promise.all([local.close(), external.close()]);
    },
  };
}
