import type { Kysely } from 'kysely';
import { columnTypes, lengthCheck } from './column-types.js';

/**
 * Model provenance (docs/design.md §5): `model_attempts` holds, as bounded JSON, the provider, model, route and outcome of
 * the last model calls of an operation. Operator-only: no DTO shows it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .alterTable('operations')
    .addColumn('model_attempts', t.varchar(1024), (c) => (t.mariadb ? c : c.check(lengthCheck('model_attempts', 1024))))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('operations').dropColumn('model_attempts').execute();
}
