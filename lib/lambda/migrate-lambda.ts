import { loadConfig } from '../config.js';
import { createMigrateHandler, type MigrateFunctionResult } from '../db/migrate-function.js';
import { openStore } from '../db/store.js';
import { createProcessLogger } from '../logger.js';
import { lazy } from '../runtime.js';

/** The migrate Lambda's handler: `{}` in, each migration's result out; it never throws (see `createMigrateHandler`). */
export type MigrateLambdaHandler = (event: unknown) => Promise<MigrateFunctionResult>;

/**
 * The migrate Lambda (docs/design.md §9): applies every pending durable-ops migration (carried by the bundle) to
 * `DATABASE_URL` — the migration user's, in AWS — and answers each migration's result. Invoke it after every deploy
 * with `durable-ops migrate --remote <function>`. It takes no application: the schema is durable-ops's own. The
 * database pool is opened on the first invocation and kept while the instance is warm; nothing is opened at import.
 */
export function migrateLambda(): MigrateLambdaHandler {
  return createMigrateHandler({
    store: lazy(() => {
      const config = loadConfig(process.env);
      return openStore(config.DATABASE_URL, { poolSize: config.DB_POOL_SIZE });
    }),
    logger: createProcessLogger(),
  });
}
