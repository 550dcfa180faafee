import type { Config } from '../config.js';
import { createRecoveryModules, type RecoveryModule, type RecoveryModuleRegistry } from '../recovery/recovery-modules.js';
import type { TaskRegistry } from '../tasks/task-registry.js';

/**
 * What an application built on durable-ops owns: its task types and the recovery-ledger modules its tasks write. The
 * Lambda factories (`durable-ops/lambda`) and the local stack (`durable-ops/local`) are built from one of these, so the
 * API, the worker, the sweeper and `npm start`-style local runs all serve the same task types (docs/design.md §5:
 * admission refuses a type the API does not know, a worker claims only the types it knows).
 *
 * ```ts
 * export const app: DurableOpsApp = {
 *   registry: () => new TaskRegistry().register(deliverWebhookTask),
 *   recoveryModules: [{ module: 'webhook.delivery', reconciliation: 'Ask the receiver whether it got delivery <id> …' }],
 * };
 * ```
 */
export interface DurableOpsApp {
  /**
   * The task types, or a function building them from the configuration — called once per process, when the runtime is
   * built (a Lambda's first invocation). The function form lets task types depend on configuration, as the built-in
   * `createRegistry` does (`DEMO_TASKS`, `AI_TASKS`).
   */
  readonly registry: TaskRegistry | ((config: Config) => TaskRegistry);
  /**
   * The application's own recovery modules (`beginDurableRecoveryOperation`'s `module`), each with the one-line
   * reconciliation action the operator surface shows for its unresolved operations (docs/design.md §8, Ops surface).
   * They are registered after the built-in `results.s3` and `queue.redrive`. @default none
   */
  readonly recoveryModules?: readonly RecoveryModule[];
}

/**
 * The `registry` and `recoveryModules` overrides of `createRuntime` / `startRuntime` / `startLocalStack` for `app` and
 * `config`: the registry built (or taken), the built-in recovery modules plus the application's.
 * @throws {TypeError} when a recovery module is malformed or registered twice (a built-in name included), or the
 * registry function throws it (e.g. a duplicate task type); whatever else the registry function throws.
 */
export function appOverrides(app: DurableOpsApp, config: Config): { readonly registry: TaskRegistry; readonly recoveryModules: RecoveryModuleRegistry } {
  const registry = typeof app.registry === 'function' ? app.registry(config) : app.registry;
  const recoveryModules = createRecoveryModules();
  for (const entry of app.recoveryModules ?? []) recoveryModules.register(entry);
  return { registry, recoveryModules };
}
