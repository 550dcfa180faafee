import { sql, type Kysely } from 'kysely';
import type { Database } from '../lib/db/database.js';
import type { Store } from '../lib/db/store.js';
import { parseDbTime } from '../lib/db/db-time.js';
import { verifyAllChains } from '../lib/recovery/chain-verification.js';

/** One answer the API gave to an admission: the owner's idempotency key and the operation id it named. */
export interface AdmittedRecord {
  readonly ownerUserId: string;
  readonly key: string;
  readonly id: string;
}

/** An operation row as the checker needs it (times as ms since the epoch, database clock). */
export interface OperationRecord {
  readonly id: string;
  readonly ownerUserId: string;
  readonly key: string;
  readonly status: string;
  readonly attempt: number;
  readonly cycle: number;
  readonly availableAtMs: number | null;
  readonly leaseExpiresAtMs: number | null;
}

/**
 * One recorded write to an operation (`chaos_transitions`), in commit order per operation: `status` — a change of its
 * status, attempt, cycle or lease token (`note`: the new failure message); `progress` — a progress write (`note`: the
 * new stage). Attempts and cycles are the row's before (`from…`) and after (`to…`) the write.
 */
export interface TransitionRecord {
  readonly seq: number;
  readonly operationId: string;
  readonly kind: 'status' | 'progress';
  readonly from: string | null;
  readonly to: string;
  readonly fromAttempt: number | null;
  readonly toAttempt: number;
  readonly fromCycle: number | null;
  readonly toCycle: number;
  readonly leaseChanged: boolean;
  readonly note: string | null;
  /**
   * When the write ran, ms since the epoch, on the database clock: the row's `updated_at` after it (the lifecycle
   * module sets it to its statement's now on every write). Absent in histories recorded before the chaos schema had it.
   */
  readonly atMs?: number;
  /**
   * The row's `lease_expires_at` just before the write (the trigger's `OLD.lease_expires_at`), ms since the epoch, or
   * null when the row had no lease. On a write that ends a lease, this is where that lease stood when it ended: no
   * heartbeat extends a lease that has expired (the lease guard demands `lease_expires_at > now`), so for the
   * sweeper's expiry it is exactly the lease's end. Absent in older histories.
   */
  readonly fromLeaseExpiresAtMs?: number | null;
}

/** One run of the task handler (effect rows and execution records share this key). */
export interface RunRecord {
  readonly operationId: string;
  readonly cycle: number;
  readonly attempt: number;
  readonly worker: string;
}

/**
 * One call the chaos task made to the harness's external service (`call-recorder.ts`), as the service recorded it:
 * which run made it and when it arrived — the host clock, whole ms (truncated) since the epoch. The harness, its
 * worker processes and MariaDB run on one host, so this is the clock the database reads too.
 */
export interface ExternalCallRecord {
  readonly operationId: string;
  readonly cycle: number;
  readonly attempt: number;
  readonly worker: string;
  readonly atMs: number;
}

/**
 * Everything the invariant checker reads (Jepsen-style: what the clients were told, plus what the database holds),
 * as plain JSON so that a history can be saved and checked again (`test/chaos/fixtures/`).
 */
export interface ChaosHistory {
  /** Database time when the history was read, ms since the epoch. */
  readonly readAtMs: number;
  readonly admitted: readonly AdmittedRecord[];
  readonly operations: readonly OperationRecord[];
  /** Successes committed (one row per success transaction). */
  readonly effects: readonly RunRecord[];
  /** Handler runs started (committed or not). */
  readonly executions: readonly RunRecord[];
  readonly notifications: ReadonlyArray<{ readonly operationId: string; readonly ownerUserId: string; readonly cycle: number; readonly status: string }>;
  readonly transitions: readonly TransitionRecord[];
  /** Held capacity slots: pool key and holder. */
  readonly capacity: ReadonlyArray<{ readonly poolKey: string; readonly operationId: string }>;
  /**
   * The owners' capacity counters (`owner_capacity`). Absent in histories recorded while per-owner capacity was slot
   * rows (`owner:…`, `running:…` in `capacity`): then those slots are checked instead.
   */
  readonly ownerCapacity?: ReadonlyArray<{ readonly taskType: string; readonly ownerUserId: string; readonly active: number; readonly running: number }>;
  /**
   * Every call the chaos task made to the external service, in arrival order. Absent in histories recorded before the
   * harness had the service (then there is nothing to check against the leases).
   */
  readonly externalCalls?: readonly ExternalCallRecord[];
  /**
   * Every answer the run's API clients got, by `answerKey` (`2xx`, `4xx`, `500`, `503`, `network`). Absent in histories
   * recorded before the harness tallied them.
   */
  readonly apiAnswers?: Readonly<Record<string, number>>;
  /** The recovery ledger's chain verification (`verifyAllChains`). */
  readonly chains: { readonly checked: number; readonly broken: ReadonlyArray<{ readonly operationId: string; readonly seq: number; readonly reason: string }> };
}

/** A database time as ms since the epoch: the driver hands out UTC strings without a zone (`dateStrings`), or Dates. */
const ms = (value: Date | string | null | undefined): number | null =>
  value === null || value === undefined ? null : typeof value === 'string' ? parseDbTime(value).getTime() : value.getTime();

const runRecord = (r: Record<string, unknown>): RunRecord => ({
  operationId: r.operation_id as string,
  cycle: Number(r.cycle),
  attempt: Number(r.attempt),
  worker: r.worker as string,
});

/**
 * Reads a {@link ChaosHistory} from the chaos database (MariaDB, with the harness's tables from `createChaosSchema`),
 * with the external calls the harness's service recorded (`call-recorder.ts`).
 * Reads everything: the harness bounds the run, so the tables stay small (tens of thousands of rows).
 * @throws driver errors (the caller retries: the read follows a crash-restart of the server).
 */
export async function readHistory(store: Store, admitted: readonly AdmittedRecord[], externalCalls: readonly ExternalCallRecord[] = []): Promise<ChaosHistory> {
  const db = store.db as unknown as Kysely<any>;
  const typed = store.db as Kysely<Database>;
  const now = await sql<{ now: Date }>`SELECT ${store.timeAt()} AS now`.execute(typed);
  const operations = await typed
    .selectFrom('operations')
    .select(['id', 'owner_user_id', 'idempotency_key', 'status', 'attempt', 'retry_count', 'available_at', 'lease_expires_at'])
    .execute();
  const effects = await db.selectFrom('chaos_effects').selectAll().orderBy('id').execute();
  const executions = await db.selectFrom('chaos_executions').selectAll().orderBy('id').execute();
  const notifications = await typed.selectFrom('operation_notifications').select(['operation_id', 'owner_user_id', 'cycle', 'status']).execute();
  const transitions = await db.selectFrom('chaos_transitions').selectAll().orderBy('seq').execute();
  const capacity = await typed.selectFrom('capacity_slots').select(['pool_key', 'operation_id']).where('operation_id', 'is not', null).execute();
  const ownerCapacity = await typed.selectFrom('owner_capacity').selectAll().execute();
  return {
    readAtMs: ms(now.rows[0]?.now ?? null) ?? Date.now(),
    admitted,
    operations: operations.map((o) => ({
      id: o.id,
      ownerUserId: o.owner_user_id,
      key: o.idempotency_key,
      status: o.status,
      attempt: o.attempt,
      cycle: o.retry_count,
      availableAtMs: ms(o.available_at),
      leaseExpiresAtMs: ms(o.lease_expires_at),
    })),
    effects: effects.map(runRecord),
    executions: executions.map(runRecord),
    notifications: notifications.map((n) => ({ operationId: n.operation_id, ownerUserId: n.owner_user_id, cycle: n.cycle, status: n.status })),
    transitions: transitions.map((t) => ({
      seq: Number(t.seq),
      operationId: t.operation_id as string,
      kind: t.kind === 'progress' ? 'progress' : 'status',
      from: (t.from_status as string | null) ?? null,
      to: t.to_status as string,
      fromAttempt: t.from_attempt === null ? null : Number(t.from_attempt),
      toAttempt: Number(t.to_attempt),
      fromCycle: t.from_cycle === null ? null : Number(t.from_cycle),
      toCycle: Number(t.to_cycle),
      leaseChanged: Number(t.lease_changed) === 1,
      note: (t.note as string | null) ?? null,
      atMs: ms(t.at as string) ?? 0,
      fromLeaseExpiresAtMs: ms(t.from_lease_expires_at as string | null),
    })),
    externalCalls,
    capacity: capacity.map((c) => ({ poolKey: c.pool_key, operationId: c.operation_id as string })),
    ownerCapacity: ownerCapacity.map((c) => ({ taskType: c.task_type, ownerUserId: c.owner_user_id, active: Number(c.active), running: Number(c.running) })),
    chains: await verifyAllChains(store),
  };
}
