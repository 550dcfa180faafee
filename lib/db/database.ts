import type { ColumnType, Generated, Kysely, RawBuilder, Transaction } from 'kysely';
import type { OperationStatus } from '../operations/lifecycle/operation-status.js';
import type { PrivacyMode } from '../owners/privacy-mode.js';

/**
 * Row types of the tables the migrations create. Timestamps are strings as the drivers return them:
 * `YYYY-MM-DD HH:MM:SS.ffffff` (MariaDB `datetime(6)`, mysql2 `dateStrings`) or `YYYY-MM-DD HH:MM:SS.fff`
 * (SQLite text written by `strftime`), always UTC. Convert with `parseDbTime`.
 */
export interface OperationsTable {
  id: string;
  owner_user_id: string;
  task_type: string;
  idempotency_key: string;
  /** SHA-256 hex of the canonical request (task type + subject + params). */
  request_hash: string;
  subject_type: string;
  subject_id: string;
  /** Canonical JSON of the validated task params. Bounded task/policy fields only, never raw content. */
  params_json: string;
  status: OperationStatus;
  /** The owner's privacy mode when admitted (docs/design.md §4); the worker routes by this snapshot, never by live settings. */
  privacy_mode: PrivacyMode;
  priority: number;
  /** Attempts started in the current cycle (reset by an owner retry). */
  attempt: number;
  max_attempts: number;
  /** Owner retries used so far; also the notification cycle number. */
  retry_count: number;
  lease_token: string | null;
  lease_expires_at: string | null;
  heartbeat_at: string | null;
  cancel_requested_at: string | null;
  /** Who asked for the cancel (an `Actor`: `owner`, `operator:<sub>`, `cli:<user>@<host>`), set with `cancel_requested_at`; NULL on rows cancelled before it was recorded. Operator-only. */
  cancel_requested_by: string | null;
  progress_percent: number;
  progress_stage: string | null;
  failure_code: string | null;
  /** Bounded operator-facing failure text; never returned by the owner API. */
  failure_message: string | null;
  deadline_at: string;
  /** Earliest time a worker may claim it (claimable states only; `nextAttemptAt` when waiting for retry, or queued by a delayed admission). */
  available_at: string | null;
  /** When the sweeper should next re-send an SQS wake-up for this row (claimable states only). */
  wake_at: string | null;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  finished_at: string | null;
  /** JSON list of the last model calls' provenance (`ModelAttempt`, docs/design.md §5); operator-only, never in a DTO. */
  model_attempts: string | null;
  /** Virtual column derived from `status`: `L` (queued, waiting for retry), `X` (waiting for external fallback), else NULL. */
  claim_lane: ColumnType<'L' | 'X' | null, never, never>;
}

/** An idempotency key answered with another, active operation (docs/design.md §2, Idempotency): primary key (owner, task type, key). */
export interface OperationKeyAliasesTable {
  owner_user_id: string;
  task_type: string;
  idempotency_key: string;
  /** SHA-256 hex of the canonical request that used the key. */
  request_hash: string;
  operation_id: string;
  created_at: string;
}

/** One row per terminal transition: primary key (operation_id, cycle). */
export interface OperationNotificationsTable {
  operation_id: string;
  owner_user_id: string;
  task_type: string;
  status: OperationStatus;
  failure_code: string | null;
  /** The operation's `retry_count` at the terminal transition. */
  cycle: number;
  created_at: string;
}

/** An owner's live settings; no row means the documented defaults (`owner-settings.ts`). */
export interface OwnerSettingsTable {
  owner_user_id: string;
  plan: string;
  /** 1 or 0. */
  ai_enabled: number;
  privacy_mode: PrivacyMode;
  updated_at: string;
}

/** One slot of a capacity pool: free when `operation_id` is null, else held by that operation. */
export interface CapacitySlotsTable {
  pool_key: string;
  slot_no: number;
  operation_id: string | null;
  reserved_at: string | null;
}

/**
 * One owner's capacity of one task type as two counters (docs/design.md §4): `active` operations and `running` ones;
 * see `lib/capacity/owner-capacity.repository.ts`.
 */
export interface OwnerCapacityTable {
  task_type: string;
  owner_user_id: string;
  active: number;
  running: number;
}

/**
 * One (task type, owner) that may have claimable work, in the fair claim order (docs/design.md §4); see
 * `lib/operations/lease/owner-turns.repository.ts`.
 */
export interface OwnerTurnsTable {
  task_type: string;
  owner_user_id: string;
  ready_at: string;
  served_at: string;
  work_seq: number;
}

/**
 * One admission token bucket per (task type, owner) (docs/design.md §4, admission rate); see
 * `lib/capacity/admission-bucket.repository.ts`. `milli_tokens`: tokens left in thousandths (an admission spends 1000);
 * `refilled_at`: the database-clock instant up to which refill has been credited.
 */
export interface AdmissionBucketsTable {
  task_type: string;
  owner_user_id: string;
  milli_tokens: number;
  refilled_at: string;
}

/** A durable recovery operation (docs/design.md §8); see `lib/recovery/`. */
export interface RecoveryOperationsTable {
  id: string;
  module: string;
  kind: string;
  idempotency_key: string;
  request_hash: string;
  effect_class: string;
  /** Canonical JSON of the recovery plan. */
  recovery_plan: string;
  /** Canonical JSON of the precondition evidence. */
  precondition_evidence: string;
  state: string;
  lease_owner: string | null;
  fence: number;
  lease_expires_at: string | null;
  chain_head_hash: string;
  checkpoint_count: number;
  created_at: string;
  updated_at: string;
}

/** One hash-chained checkpoint of a recovery operation; primary key (operation_id, seq). */
export interface RecoveryCheckpointsTable {
  operation_id: string;
  seq: number;
  kind: string;
  state: string;
  fence: number;
  previous_fence: number | null;
  /** Canonical JSON of the checkpoint's evidence. */
  evidence: string;
  prev_hash: string;
  hash: string;
  created_at: string;
}

/**
 * A job posting, owner-scoped: the raw text AI features work on lives here, never in `operations` (docs/design.md §2).
 * Bounds (characters) are `JobLimits` in `lib/jobs/job-limits.ts`.
 */
export interface JobsTable {
  /** A lower-case UUID. */
  id: string;
  owner_user_id: string;
  title: string;
  company: string;
  description: string;
  created_at: string;
  updated_at: string;
}

/** What an AI feature produced for one of an owner's jobs: one row per (owner, job, note kind). */
export interface AiWorkspaceNotesTable {
  id: string;
  owner_user_id: string;
  job_id: string;
  note_kind: string;
  /** JSON text of the note, at most `JobLimits.noteContentJson` characters. */
  content_json: string;
  /** The operation that produced (or last replaced) the note. */
  operation_id: string;
  created_at: string;
  updated_at: string;
}

/**
 * One change of an operation's `status` or `attempt`, written only by the triggers on `operations` (migrations
 * `20261201001100`–`20261201001500`), never by the code. `at` is the operation's `updated_at` after the change; `cycle`
 * its `retry_count`; `failure_code` its code after the change, or `lease_expired` when the change ended an expired lease.
 */
export interface OperationEventsTable {
  /** Global auto-increment: an operation's events in `seq` order are its changes in commit order. */
  seq: Generated<number>;
  operation_id: string;
  at: string;
  /** NULL for the admission (the row's insert). */
  from_status: OperationStatus | null;
  to_status: OperationStatus;
  attempt: number;
  cycle: number;
  failure_code: string | null;
  /** On a change to `cancelled`: who had asked for the cancel (the operation's `cancel_requested_by` then); else NULL. */
  cancelled_by: string | null;
}

/** One sweeper run: its start and end (database clock) and its `SweepCounts` as JSON (at most 1024 characters). */
export interface SweeperRunsTable {
  id: Generated<number>;
  started_at: string;
  finished_at: string;
  counts: string;
}

/** The kysely schema of durable-ops. */
export interface Database {
  recovery_operations: RecoveryOperationsTable;
  recovery_checkpoints: RecoveryCheckpointsTable;
  operations: OperationsTable;
  operation_notifications: OperationNotificationsTable;
  operation_key_aliases: OperationKeyAliasesTable;
  operation_events: OperationEventsTable;
  sweeper_runs: SweeperRunsTable;
  owner_settings: OwnerSettingsTable;
  capacity_slots: CapacitySlotsTable;
  owner_turns: OwnerTurnsTable;
  owner_capacity: OwnerCapacityTable;
  admission_buckets: AdmissionBucketsTable;
  jobs: JobsTable;
  ai_workspace_notes: AiWorkspaceNotesTable;
}

/**
 * What a repository function needs: a connection or transaction, and the database-clock expression of the
 * store (`timeAt(deltaMs)`, see `Store`). A `Store` is one; `inTransaction` hands out one bound to the transaction.
 */
export interface DbContext {
  readonly db: Kysely<Database> | Transaction<Database>;
  timeAt(deltaMs?: number): RawBuilder<string>;
}

/** A {@link DbContext} whose statements run inside one transaction. */
export interface TxContext extends DbContext {
  readonly db: Transaction<Database>;
}
