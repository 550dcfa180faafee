import { sql } from 'kysely';
import { ConfigError } from '../errors.js';
import type { Store } from './store.js';

/**
 * Refuses a MariaDB connection on which a guarded UPDATE's row count does not mean "rows matched". Every state change
 * checks that its guarded UPDATE changed exactly the rows it named (docs/design.md §2); that count means *matched*
 * rows only when the client connects with `CLIENT_FOUND_ROWS` (`openStore` sets it explicitly). A connection without
 * it — a proxy that drops the flag, a pool built elsewhere — reports *changed* rows, and an UPDATE that writes the
 * values a row already has (a repeated cancel, a heartbeat within the clock's resolution) would read as "the guard
 * did not hold": a lease wrongly lost, a 409 for a repeated cancel.
 *
 * The probe: `UPDATE kysely_migration SET name = name LIMIT 1` — it writes nothing, and reports 1 with the flag, 0
 * without. One round trip, at start-up (`startRuntime`). Nothing to check on SQLite (its count is always matched
 * rows), nor on a database that is not migrated yet (no row to probe; its first query fails on the missing tables).
 * @throws {ConfigError} when the connection reports changed rows instead of matched rows.
 */
export async function assertMatchedRowCounts(store: Store): Promise<void> {
  if (store.caps.dialect !== 'mariadb') return;
  // Only a missing table (ER_NO_SUCH_TABLE) means "not migrated yet"; any other error (a grant, a renamed table) is
  // raised: the check must not pass by failing.
  const migrated = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM kysely_migration`.execute(store.db).then(
    (result) => Number(result.rows[0]?.n ?? 0) > 0,
    (error: unknown) => {
      if ((error as { errno?: unknown }).errno === 1146) return false;
      throw error;
    },
  );
  if (!migrated) return;
  const result = await sql`UPDATE kysely_migration SET name = name ORDER BY name LIMIT 1`.execute(store.db);
  if (Number(result.numAffectedRows ?? 0n) !== 1) {
    throw new ConfigError(
      'The MariaDB connection counts changed rows, not matched rows (CLIENT_FOUND_ROWS is off): durable-ops guards would misread. Connect with the FOUND_ROWS client flag (openStore sets it) and check that any proxy in between keeps it.',
    );
  }
}
