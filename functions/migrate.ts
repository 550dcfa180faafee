import { migrateLambda } from '../lib/lambda/migrate-lambda.js';

/**
 * Migrate Lambda (docs/design.md §9): applies every pending migration (the static provider of `migrations/index.ts`, bundled
 * with it) to `DATABASE_URL` — the migration user's credentials in AWS — and answers each migration's result. Invoked
 * after a deploy by `durable-ops migrate --remote <function>` (`migrateRemote`). Nothing is opened at import; the
 * database pool is built on the first invocation and kept while the instance is warm (`migrateLambda`).
 */
export const handler = migrateLambda();
