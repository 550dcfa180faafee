/**
 * `npm run migrate [-- --down]`: applies every pending migration to DATABASE_URL (or, with `--down`, rolls every
 * migration back — this drops all operation history; see README "Rollback"). Prints each migration's result.
 */
import { loadConfig } from '../lib/config.js';
import { migrateAllDown, migrateToLatest } from '../lib/db/migrate.js';
import { openStore } from '../lib/db/store.js';

const config = loadConfig();
const store = openStore(config.DATABASE_URL);
const down = process.argv.includes('--down');
try {
  const results = down ? await migrateAllDown(store) : await migrateToLatest(store);
  if (results.length === 0) console.log('Nothing to do: the schema is up to date.');
  for (const r of results) console.log(`${r.direction.padEnd(4)} ${r.status.padEnd(7)} ${r.migrationName}`);
} catch (error) {
  console.error(`Migration failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
} finally {
  await store.destroy();
}
