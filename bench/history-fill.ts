import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { v7 as uuidv7 } from 'uuid';
import { BENCH_SUBJECT_TYPE, BENCH_TASK_TYPE, benchOwner } from './durable-ops-deps.js';
import { connect } from './mariadb.js';

/** Rows per multi-row INSERT. */
const CHUNK = 1_000;
const DAY_MS = 86_400_000;

/** `YYYY-MM-DD HH:MM:SS.ffffff` (UTC), the form MariaDB `datetime(6)` columns hold. */
function dbTime(ms: number): string {
  return `${new Date(ms).toISOString().replace('T', ' ').replace('Z', '')}000`;
}

/**
 * Writes terminal history rows `from … to − 1` straight into `operations` and `operation_notifications` (bulk
 * multi-row INSERTs of {@link CHUNK} rows, each chunk one transaction): every one `succeeded` with its notification,
 * spread round-robin over `owners` owners, created in order over the 28 days before the last hour (inside the 30-day
 * retention, so the sweeper has nothing to purge; a second of random jitter) and finished 1–60 s after they were
 * created. A later call for the next range spreads its rows over the same 28 days: the history grows denser.
 *
 * Rows go in in time order, as real traffic writes them; so do their ids, which are UUIDv7 of their `created_at` (RFC
 * 9562), as admission makes them: time-ordered, so every id of the history sorts before the ids the timed statements
 * insert afterwards. Runs `ANALYZE TABLE` at the end. Returns the seconds it took.
 */
export async function fillHistory(serverUrl: string, database: string, options: { from: number; to: number; owners: number }): Promise<number> {
  const connection = await connect(serverUrl, database);
  const started = performance.now();
  try {
    const now = Date.now();
    const span = 28 * DAY_MS;
    const count = Math.max(1, options.to - options.from);
    for (let start = options.from; start < options.to; start += CHUNK) {
      const operations: unknown[][] = [];
      const notifications: unknown[][] = [];
      for (let i = start; i < Math.min(options.to, start + CHUNK); i++) {
        const position = (i - options.from) / count;
        const owner = benchOwner(i % options.owners);
        const created = now - 3_600_000 - span + position * span + Math.random() * 1_000;
        const id = uuidv7({ msecs: Math.floor(created) });
        const startedAt = created + 50 + Math.random() * 2_000;
        const finished = startedAt + 1_000 + Math.random() * 59_000;
        operations.push([
          id, owner, BENCH_TASK_TYPE, `history-${String(i).padStart(8, '0')}`, randomBytes(32).toString('hex'), BENCH_SUBJECT_TYPE, `h-${String(i).padStart(8, '0')}`, `{"i":${i}}`,
          'succeeded', 'local_only', 0, 1, 3, 0, 100, dbTime(finished - 500), dbTime(created + 900_000),
          dbTime(created), dbTime(finished), dbTime(startedAt), dbTime(finished),
        ]);
        notifications.push([id, owner, BENCH_TASK_TYPE, 'succeeded', null, 0, dbTime(finished)]);
      }
      await connection.beginTransaction();
      await connection.query(
        'INSERT INTO operations (id, owner_user_id, task_type, idempotency_key, request_hash, subject_type, subject_id, params_json, ' +
          'status, privacy_mode, priority, attempt, max_attempts, retry_count, progress_percent, heartbeat_at, deadline_at, ' +
          'created_at, updated_at, started_at, finished_at) VALUES ?',
        [operations],
      );
      await connection.query('INSERT INTO operation_notifications (operation_id, owner_user_id, task_type, status, failure_code, cycle, created_at) VALUES ?', [notifications]);
      await connection.commit();
    }
    await connection.query('ANALYZE TABLE operations, operation_notifications');
    return (performance.now() - started) / 1000;
  } finally {
    await connection.end();
  }
}
