import { CompiledQuery } from 'kysely';
import { randomBytes } from 'node:crypto';
import type { OwnerPair } from '../../capacity/owner-capacity.repository.js';
import type { Store } from '../../db/store.js';
import { DEFAULT_OWNER_SETTINGS } from '../../owners/owner-settings.js';
import type { PrivacyMode } from '../../owners/privacy-mode.js';
import type { OperationStatus } from '../lifecycle/operation-status.js';
import { taskPolicy } from '../operation-policy.js';
import type { ClaimDeps, ClaimedOperation } from './claim-operation.js';
import { MAX_TURNS_PER_CLAIM, priorityTiers, routeSlotOf, type Lane } from './fair-claim.js';

/**
 * The call of `claim_operations_v2` (migrations/20261202002400_create_owner_capacity_routines_v2.ts; docs/design.md §9):
 * fixed text, compiled once; the claimer's task types and the fresh lease tokens go as JSON parameters, inline in the
 * one text packet (mysql2 `query`: no server-side prepared statement). The text grows about 250 bytes per task type
 * and 67 per claim: a registry of 40 task types claiming 32 at once stays under the 16 KB above which RDS Proxy pins.
 */
export const CLAIM_CALL = 'CALL claim_operations_v2(?, ?, ?, ?, ?, ?, ?, ?)';

/** One task type as the routine reads it (see the migration for the fields). */
interface TypeConfig {
  readonly t: string;
  readonly lanes: readonly ('L' | 'X')[];
  readonly all: 1 | 2;
  readonly ms: number;
  readonly rk?: string;
  readonly rn?: number;
  readonly lim: Readonly<Record<string, number>>;
}

/**
 * The routine's `p_config` for the claimer's lanes: the same tiers, lanes, lease lengths, route pools and running
 * limits the in-process `FairClaim` derives from `deps`, so the two cannot disagree.
 */
export function claimConfig(deps: ClaimDeps, lanes: readonly Lane[]): string {
  const plans = [...deps.capacity.planNames, '*'];
  return JSON.stringify(
    priorityTiers(deps, lanes).map((types) =>
      types.map((type): TypeConfig => {
        const task = deps.registry.get(type);
        const route = routeSlotOf(deps, { type, lane: 'local' });
        return {
          t: type,
          lanes: lanes.filter((lane) => lane.type === type).map((lane) => (lane.lane === 'local' ? 'L' : 'X')),
          all: task.model !== undefined ? 2 : 1,
          ms: taskPolicy(task, deps.policy).leaseMs,
          ...(route ? { rk: route.key, rn: route.limit } : {}),
          lim: Object.fromEntries(plans.map((plan) => [plan, deps.capacity.runningLimit(type, plan)])),
        };
      }),
    ),
  );
}

/** What one claim call did: the claims, the task type of each turn passed over at its limit, and pairs lacking their counter row. */
export interface ClaimCallResult {
  readonly claims: ClaimedOperation[];
  readonly passedOver: readonly string[];
  readonly incompletePairs: readonly OwnerPair[];
}

/** A claimed row as the routine answers it. */
interface ClaimedRow {
  readonly id: string;
  readonly owner_user_id: string;
  readonly lease_token: string;
  readonly task_type: string;
  readonly attempt: number;
  readonly max_attempts: number;
  readonly params_json: string;
  readonly lease_ms: number | string;
  readonly from_status: OperationStatus;
  readonly privacy_mode: PrivacyMode;
  readonly subject_type: string;
  readonly subject_id: string;
  readonly status: OperationStatus;
  readonly cancel_requested_at: string | null;
  readonly owner_plan: string | null;
  readonly owner_ai_enabled: number | null;
  readonly owner_privacy_mode: PrivacyMode | null;
}

/**
 * Runs `claim_operations_v2` once (one round trip): up to `max` claims in the fair order, each with a new lease token
 * of 256 bits from `crypto.randomBytes`; the owners in `raced` (an earlier try lost their running limit) are passed over.
 * @throws the driver's error for anything the routine re-raised (a deadlock is 1213: `caps.isTransient`).
 */
export async function callClaimOperations(store: Store, deps: ClaimDeps, lanes: readonly Lane[], max: number, raced: readonly OwnerPair[] = []): Promise<ClaimCallResult> {
  const tokens = Array.from({ length: max }, () => randomBytes(32).toString('hex'));
  const parameters = [
    max,
    claimConfig(deps, lanes),
    JSON.stringify(tokens),
    deps.capacity.runningLimitsByPlan ? 1 : 0,
    DEFAULT_OWNER_SETTINGS.plan,
    Math.round(store.clockOffsetMs()),
    MAX_TURNS_PER_CLAIM,
    JSON.stringify(raced.map((pair) => ({ t: pair.taskType, o: pair.ownerUserId }))),
  ];
  const { rows } = await store.db.executeQuery(CompiledQuery.raw(CLAIM_CALL, parameters));
  // [[claimed rows], [summary row], OkPacket]
  const [claimed, summary] = rows as unknown as [ClaimedRow[], [{ passed_over: string; incomplete_pairs: string }]];
  const incomplete = JSON.parse(summary[0].incomplete_pairs) as [string, string][];
  return {
    // The i-th claim was given the i-th token; the row's token is what a read after the commit saw.
    claims: claimed.map((row, i) => ({
      operationId: row.id,
      ownerUserId: row.owner_user_id,
      leaseToken: tokens[i] as string,
      taskType: row.task_type,
      attempt: row.attempt,
      maxAttempts: row.max_attempts,
      paramsJson: row.params_json,
      leaseMs: Number(row.lease_ms),
      claimedFrom: row.from_status,
      privacyMode: row.privacy_mode,
      subject: { type: row.subject_type, id: row.subject_id },
      afterClaim: {
        leaseHeld: row.status === 'running' && row.lease_token === tokens[i],
        cancelRequested: row.cancel_requested_at !== null,
        ownerSettings:
          row.owner_plan === null
            ? DEFAULT_OWNER_SETTINGS
            : { plan: row.owner_plan, aiEnabled: row.owner_ai_enabled === 1, privacyMode: row.owner_privacy_mode ?? DEFAULT_OWNER_SETTINGS.privacyMode },
      },
    })),
    passedOver: JSON.parse(summary[0].passed_over) as string[],
    incompletePairs: incomplete.map(([taskType, ownerUserId]) => ({ taskType, ownerUserId })),
  };
}
