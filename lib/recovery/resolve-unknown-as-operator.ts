import { z } from 'zod';
import type { Store } from '../db/store.js';
import { InvalidRecoveryMoveError, RecoveryOperationNotFoundError } from './recovery-errors.js';
import { RECOVERY_STATES } from './recovery-model.js';
import { findRecoveryOperation } from './recovery.repository.js';
import { takeOverRecoveryOperation } from './take-over-recovery-operation.js';
import { parseUnknownResolution } from './unknown-resolution.js';
import { operatorActor } from '../owners/actor.js';

/** The lease an operator's takeover holds while it resolves, in **milliseconds**; released when the resolution ends. */
export const OPERATOR_RESOLUTION_LEASE_MS = 60_000;

/** Body of `POST /api/ops/recovery/{id}/resolve-unknown`: the operation and the state the resolution left it in. */
export const ResolvedRecoveryDtoSchema = z.strictObject({ id: z.string(), state: z.enum(RECOVERY_STATES) }).meta({ id: 'ResolvedRecovery' });

/** See {@link ResolvedRecoveryDtoSchema}. */
export type ResolvedRecoveryDto = z.infer<typeof ResolvedRecoveryDtoSchema>;

/** What {@link resolveUnknownAsOperator} is given. */
export interface OperatorResolution {
  /** The recovery operation id (a path parameter: anything but an existing operation's id is a 404). */
  readonly operationId: unknown;
  /** The operator, e.g. the JWT `sub`: the takeover's lease owner is `operator:<operator>` (cut to 128 characters). */
  readonly operator: string;
  /** The body: an `UnknownResolution`. */
  readonly resolution: unknown;
}

/**
 * Resolves an `outcome_unknown` recovery operation as an operator (docs/design.md §8): validates the resolution first (nothing
 * is taken over for a bad one), takes the operation over under lease owner `operator:<sub>` — possible only once the
 * previous holder's lease expired — and calls `resolveUnknown` with the operator's evidence: `occurred: true` →
 * `succeeded`; `false` → `verified_recovered`. The takeover and every step are checkpoints of its hash chain.
 * ```
 *  parse body ─▶ read: outcome_unknown? ─▶ takeover (fence + 1, `operator:<sub>`) ─▶ resolveUnknown ─▶ {id, state}
 *  400 ◀─┘            404 / 409 ◀─┘            409 (lease live) ◀─┘        409 (chain broken) ◀─┘
 * ```
 * @throws {ValidationError} an invalid resolution, including secret-looking evidence (400).
 * @throws {RecoveryOperationNotFoundError} no such recovery operation (404).
 * @throws {InvalidRecoveryMoveError} it is not `outcome_unknown` (409).
 * @throws {NothingToTakeOverError} a live lease holds it, or a racer took it first (409).
 * @throws {ChainBrokenError | StaleFenceError} its chain does not verify, or it was taken from the operator meanwhile
 * (409); the takeover checkpoint stays and the operator's lease runs out.
 */
export async function resolveUnknownAsOperator(store: Store, input: OperatorResolution): Promise<ResolvedRecoveryDto> {
  const resolution = parseUnknownResolution(input.resolution, 'body');
  const id = z.string().uuid().safeParse(input.operationId);
  const row = id.success ? await findRecoveryOperation(store, id.data) : undefined;
  if (!row) throw new RecoveryOperationNotFoundError(String(input.operationId));
  if (row.state !== 'outcome_unknown') throw new InvalidRecoveryMoveError(row.id, row.state, 'resolve_unknown');
  const handle = await takeOverRecoveryOperation(store, {
    operationId: row.id,
    leaseOwner: operatorActor(input.operator),
    leaseMs: OPERATOR_RESOLUTION_LEASE_MS,
  });
  await handle.resolveUnknown(resolution);
  return { id: row.id, state: handle.state };
}
