import { z } from 'zod';
import { BeginRecoverySchema } from './begin-recovery-operation.js';

/**
 * One module that writes durable recovery operations, and what an operator must do about one of its unresolved
 * operations. The operator surface lists unresolved operations; the module that owns one provides the reconciliation
 * action and its business-level explanation (docs/design.md §8, Ops surface).
 *
 * - `module`: the name it passes to `beginDurableRecoveryOperation` (lower-case `[a-z0-9_.-]`, at most 64 characters).
 * - `reconciliation`: one operator-facing line (1–300 characters, no line breaks) saying how to check the effect and
 *   how to resolve it, e.g. "Check the DLQ redrive: look the message up in the main queue; resolve with
 *   `npm run recovery -- …`". It is shown as it is by `GET /api/ops/recovery` and `npm run recovery -- list`, so it
 *   must name no secret.
 */
export const RecoveryModuleSchema = z.strictObject({
  module: BeginRecoverySchema.shape.module,
  reconciliation: z
    .string()
    .min(1)
    .max(300)
    .regex(/^[^\r\n]*$/, 'must be one line'),
});

/** See {@link RecoveryModuleSchema}. */
export type RecoveryModule = z.infer<typeof RecoveryModuleSchema>;

/**
 * What {@link RecoveryModuleRegistry.reconciliationOf} answers for a module that registered nothing: the operation was
 * written by code this process does not know (another deployment, a removed module), so the operator has only the
 * ledger itself to go on.
 */
export const UNREGISTERED_RECONCILIATION =
  'No reconciliation action is registered for this module: inspect it with `npm run recovery -- show <id>` and ask the owning team before resolving it.';

/**
 * The modules of this process that write durable recovery operations, each with its reconciliation action. Built once
 * per process ({@link createRecoveryModules}) and carried by the runtime; the operator route and CLI read it.
 */
export class RecoveryModuleRegistry {
  readonly #actions = new Map<string, string>();

  /**
   * Registers a module's reconciliation action.
   * @throws {TypeError} for a malformed entry (see {@link RecoveryModuleSchema}) or a module registered twice.
   */
  register(entry: RecoveryModule): this {
    const parsed = RecoveryModuleSchema.safeParse(entry);
    if (!parsed.success) throw new TypeError(`Invalid recovery module: ${parsed.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ')}`);
    if (this.#actions.has(parsed.data.module)) throw new TypeError(`Recovery module "${parsed.data.module}" is already registered`);
    this.#actions.set(parsed.data.module, parsed.data.reconciliation);
    return this;
  }

  /** The reconciliation action `module` registered, or {@link UNREGISTERED_RECONCILIATION}. */
  reconciliationOf(module: string): string {
    return this.#actions.get(module) ?? UNREGISTERED_RECONCILIATION;
  }
}

/**
 * The registry of the product's modules that use the recovery ledger — the one place each registers its
 * reconciliation action. Every entry point (API, CLI, local stack) builds it through here, so they all show the same
 * text.
 */
export function createRecoveryModules(): RecoveryModuleRegistry {
  return new RecoveryModuleRegistry()
    .register({
      module: 'results.s3',
      reconciliation:
        'Interrupted result-object write: once its lease expired, run `npm run recovery-reconcile -- <id>`: it deletes the s3:// object of the plan only while the object still names this operation, then records verified_recovered. The task run itself is retried by the worker.',
    })
    .register({
      module: 'queue.redrive',
      reconciliation:
        'Interrupted DLQ redrive: run `npm run recovery-reconcile -- <id>`. A `sent` checkpoint proves the send and resolves it succeeded; without one, check the main queue and worker logs and resolve by hand. Then delete the dead letter (dlqMessageId in the plan) from the DLQ: later redrives skip it.',
    });
}
