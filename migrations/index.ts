import type { Migration, MigrationProvider } from 'kysely';
import * as m0100 from './20261130000100_create_operations.js';
import * as m0200 from './20261130000200_operations_claim_index.js';
import * as m0300 from './20261130000300_operations_lease_index.js';
import * as m0400 from './20261130000400_operations_deadline_index.js';
import * as m0500 from './20261130000500_operations_owner_list_index.js';
import * as m0600 from './20261130000600_operations_wake_index.js';
import * as m0700 from './20261130000700_operations_retention_index.js';
import * as m0800 from './20261130000800_create_operation_notifications.js';
import * as m0900 from './20261130000900_notifications_owner_index.js';
import * as m1000 from './20261130001000_create_owner_settings.js';
import * as m1100 from './20261130001100_create_capacity_slots.js';
import * as m1200 from './20261130001200_capacity_slots_free_index.js';
import * as m1300 from './20261130001300_capacity_slots_holder_index.js';
import * as m1400 from './20261130001400_create_recovery_operations.js';
import * as m1500 from './20261130001500_create_recovery_checkpoints.js';
import * as m1600 from './20261130001600_recovery_operations_state_index.js';
import * as m20261201_0100 from './20261201000100_create_jobs.js';
import * as m20261201_0200 from './20261201000200_create_ai_workspace_notes.js';
import * as m20261201_0300 from './20261201000300_operations_model_attempts.js';
import * as m20261201_0400 from './20261201000400_operations_subject_index.js';
import * as m20261201_0500 from './20261201000500_create_operation_key_aliases.js';
import * as m20261201_0600 from './20261201000600_operation_key_aliases_operation_index.js';
import * as m20261201_0700 from './20261201000700_operations_claim_lane.js';
import * as m20261201_0800 from './20261201000800_operations_claim_lane_index.js';
import * as m20261201_0900 from './20261201000900_drop_operations_claim_index.js';
import * as m20261201_1000 from './20261201001000_operations_created_index.js';
import * as m20261201_1100 from './20261201001100_create_operation_events.js';
import * as m20261201_1200 from './20261201001200_operation_events_operation_index.js';
import * as m20261201_1300 from './20261201001300_operation_events_status_index.js';
import * as m20261201_1400 from './20261201001400_operations_insert_trigger.js';
import * as m20261201_1500 from './20261201001500_operations_update_trigger.js';
import * as m20261201_1600 from './20261201001600_create_sweeper_runs.js';
import * as m20261201_1700 from './20261201001700_sweeper_runs_finished_index.js';
import * as m20261202_0100 from './20261202000100_operations_claim_type_index.js';
import * as m20261202_0300 from './20261202000300_operations_expiry_index.js';
import * as m20261202_0500 from './20261202000500_operations_wakeup_index.js';
import * as m20261202_0700 from './20261202000700_create_owner_turns.js';
import * as m20261202_0900 from './20261202000900_operations_owner_claim_index.js';
import * as m20261202_1100 from './20261202001100_create_admission_buckets.js';
import * as m20261202_1300 from './20261202001300_owner_turns_type_turn_index.js';
import * as m20261202_1500 from './20261202001500_create_admit_operation_v1.js';
import * as m20261202_1700 from './20261202001700_create_complete_operations_v1.js';
import * as m20261202_1900 from './20261202001900_create_claim_operations_v1.js';
import * as m20261202_2100 from './20261202002100_create_fail_attempt_v1.js';
import * as m20261202_2200 from './20261202002200_create_owner_capacity.js';
import * as m20261202_2300 from './20261202002300_create_turn_retiring_routines_v2.js';
import * as m20261202_2400 from './20261202002400_create_owner_capacity_routines_v2.js';
import * as m20261202_2500 from './20261202002500_operations_cancel_requested_by.js';
import * as m20261202_2600 from './20261202002600_operation_events_cancelled_by.js';
import * as m20261202_2700 from './20261202002700_operations_update_trigger_cancelled_by.js';

/**
 * Every migration, by name, imported statically so a bundled Lambda carries them.
 * Names sort by time; add new ones at the end and never edit a released one.
 */
export const migrations: Readonly<Record<string, Migration>> = Object.freeze({
  '20261130000100_create_operations': m0100,
  '20261130000200_operations_claim_index': m0200,
  '20261130000300_operations_lease_index': m0300,
  '20261130000400_operations_deadline_index': m0400,
  '20261130000500_operations_owner_list_index': m0500,
  '20261130000600_operations_wake_index': m0600,
  '20261130000700_operations_retention_index': m0700,
  '20261130000800_create_operation_notifications': m0800,
  '20261130000900_notifications_owner_index': m0900,
  '20261130001000_create_owner_settings': m1000,
  '20261130001100_create_capacity_slots': m1100,
  '20261130001200_capacity_slots_free_index': m1200,
  '20261130001300_capacity_slots_holder_index': m1300,
  '20261130001400_create_recovery_operations': m1400,
  '20261130001500_create_recovery_checkpoints': m1500,
  '20261130001600_recovery_operations_state_index': m1600,
  '20261201000100_create_jobs': m20261201_0100,
  '20261201000200_create_ai_workspace_notes': m20261201_0200,
  '20261201000300_operations_model_attempts': m20261201_0300,
  '20261201000400_operations_subject_index': m20261201_0400,
  '20261201000500_create_operation_key_aliases': m20261201_0500,
  '20261201000600_operation_key_aliases_operation_index': m20261201_0600,
  '20261201000700_operations_claim_lane': m20261201_0700,
  '20261201000800_operations_claim_lane_index': m20261201_0800,
  '20261201000900_drop_operations_claim_index': m20261201_0900,
  '20261201001000_operations_created_index': m20261201_1000,
  '20261201001100_create_operation_events': m20261201_1100,
  '20261201001200_operation_events_operation_index': m20261201_1200,
  '20261201001300_operation_events_status_index': m20261201_1300,
  '20261201001400_operations_insert_trigger': m20261201_1400,
  '20261201001500_operations_update_trigger': m20261201_1500,
  '20261201001600_create_sweeper_runs': m20261201_1600,
  '20261201001700_sweeper_runs_finished_index': m20261201_1700,
  '20261202000100_operations_claim_type_index': m20261202_0100,
  '20261202000300_operations_expiry_index': m20261202_0300,
  '20261202000500_operations_wakeup_index': m20261202_0500,
  '20261202000700_create_owner_turns': m20261202_0700,
  '20261202000900_operations_owner_claim_index': m20261202_0900,
  '20261202001100_create_admission_buckets': m20261202_1100,
  '20261202001300_owner_turns_type_turn_index': m20261202_1300,
  '20261202001500_create_admit_operation_v1': m20261202_1500,
  '20261202001700_create_complete_operations_v1': m20261202_1700,
  '20261202001900_create_claim_operations_v1': m20261202_1900,
  '20261202002100_create_fail_attempt_v1': m20261202_2100,
  '20261202002200_create_owner_capacity': m20261202_2200,
  '20261202002300_create_turn_retiring_routines_v2': m20261202_2300,
  '20261202002400_create_owner_capacity_routines_v2': m20261202_2400,
  '20261202002500_operations_cancel_requested_by': m20261202_2500,
  '20261202002600_operation_events_cancelled_by': m20261202_2600,
  '20261202002700_operations_update_trigger_cancelled_by': m20261202_2700,
});

/** A kysely {@link MigrationProvider} over {@link migrations}. */
export const staticMigrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
