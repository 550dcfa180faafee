import { CompiledQuery } from 'kysely';
import type { CapacityPolicy } from '../../capacity/capacity-policy.js';
import type { Store } from '../../db/store.js';
import { DEFAULT_OWNER_SETTINGS, isEntitled } from '../../owners/owner-settings.js';
import type { TaskDefinition } from '../../tasks/task-definition.js';
import type { NewOperation, OperationRow } from '../store/operation.repository.js';

/**
 * The call of `admit_operation_v2` (migrations/20261202002400_create_owner_capacity_routines_v2.ts; docs/design.md §9,
 * server-side routines): the statement text is fixed, compiled once — only the parameters change per call, and mysql2
 * sends them inline in the one text packet (`query`, never `execute`: no server-side prepared statement, which would
 * pin an RDS Proxy session).
 */
export const ADMIT_CALL = `CALL admit_operation_v2(${Array.from({ length: 21 }, () => '?').join(', ')})`;

/** What one admission call needs: the new row's fields, its policy times and its global pool (the owner's capacity is its counter row). */
export interface AdmitCall {
  readonly row: Omit<NewOperation, 'privacy_mode'>;
  /** From admission to the queued deadline, ms. */
  readonly deadlineMs: number;
  /** From admission to the sweeper's wake-up re-send, ms. */
  readonly wakeMs: number;
  /** A new `owner_turns` row's first `work_seq` (random, see `markOwnersReady`). */
  readonly turnSeed: number;
  readonly task: Pick<TaskDefinition, 'entitlement'>;
  readonly globalPool: string;
  readonly globalLimit: number;
}

/** The routine's answer: `admitted` / `replayed` with the row; otherwise nothing was written. */
export type AdmitCallOutcome =
  | { readonly outcome: 'admitted' | 'replayed'; readonly row: OperationRow }
  | { readonly outcome: 'key_reused' | 'not_entitled' | 'owner_full' | 'global_full' | 'retry' };

const ROWLESS = new Set(['key_reused', 'not_entitled', 'owner_full', 'global_full', 'retry']);

/** Plan tables by task type, per capacity policy (both are fixed for a process's life). */
const planTables = new WeakMap<CapacityPolicy, Map<string, string>>();

/**
 * The routine's plan table for `task` (JSON text): for every plan the capacity file or the task's entitlement names,
 * and `"*"` for any other, `[entitled 0|1, per-owner limit, running limit]` — the same `isEntitled` rule (its
 * `plans` part; `aiEnabled` goes as its own parameter) and the same `CapacityPolicy` answers the in-process admission
 * uses, so the two cannot disagree.
 */
export function planTable(capacity: CapacityPolicy, taskType: string, task: Pick<TaskDefinition, 'entitlement'>): string {
  let tables = planTables.get(capacity);
  if (!tables) planTables.set(capacity, (tables = new Map()));
  let table = tables.get(taskType);
  if (table === undefined) {
    // '*' is not a valid plan name (PlanNameSchema), so it stands for every plan not listed.
    const plans = [...new Set([...capacity.planNames, ...(task.entitlement?.plans ?? [])]), '*'];
    const planRule = { entitlement: task.entitlement?.plans ? { plans: task.entitlement.plans } : undefined };
    const entries = plans.map((plan) => [
      plan,
      [isEntitled(planRule, { ...DEFAULT_OWNER_SETTINGS, plan }) ? 1 : 0, capacity.admissionLimits(taskType, plan).perOwner, capacity.runningLimit(taskType, plan)],
    ]);
    table = JSON.stringify(Object.fromEntries(entries));
    tables.set(taskType, table);
  }
  return table;
}

/**
 * Runs `admit_operation_v2` once (one round trip) and reads its one result set.
 * @throws the driver's error for anything the routine re-raised (a deadlock is 1213: `caps.isTransient`).
 * @throws {Error} when the answer is not one the routine gives (a routine of another version installed).
 */
export async function callAdmitOperation(store: Store, capacity: CapacityPolicy, call: AdmitCall): Promise<AdmitCallOutcome> {
  const { row } = call;
  const parameters = [
    row.id,
    row.owner_user_id,
    row.task_type,
    row.idempotency_key,
    row.request_hash,
    row.subject_type,
    row.subject_id,
    row.params_json,
    row.priority,
    row.max_attempts,
    Math.round(call.deadlineMs),
    Math.round(call.wakeMs),
    Math.round(store.clockOffsetMs()),
    call.turnSeed,
    call.task.entitlement?.aiEnabled ? 1 : 0,
    DEFAULT_OWNER_SETTINGS.plan,
    DEFAULT_OWNER_SETTINGS.aiEnabled ? 1 : 0,
    DEFAULT_OWNER_SETTINGS.privacyMode,
    planTable(capacity, row.task_type, call.task),
    call.globalLimit,
    call.globalPool,
  ];
  const { rows } = await store.db.executeQuery(CompiledQuery.raw(ADMIT_CALL, parameters));
  // A CALL answers with its result sets, then the call's own status: [[rows of the one SELECT], OkPacket].
  const answer = (rows as unknown as Array<Array<Record<string, unknown>>>)[0]?.[0];
  const outcome = answer?.admission_outcome;
  if (outcome === 'admitted' || outcome === 'replayed') {
    const operation: Record<string, unknown> = { ...answer };
    delete operation.admission_outcome;
    return { outcome, row: operation as unknown as OperationRow };
  }
  if (typeof outcome === 'string' && ROWLESS.has(outcome)) return { outcome } as AdmitCallOutcome;
  throw new Error(`admit_operation_v2 answered ${JSON.stringify(outcome)}`);
}
