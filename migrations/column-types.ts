import { MysqlAdapter, sql, type Kysely, type RawBuilder } from 'kysely';

/**
 * Column types for one dialect. Shared by the migrations in this folder only. Migrations never import `lib/`, so a
 * later change there cannot change what a released migration does; what they need lives here and, like them, is
 * frozen once released.
 *
 * MariaDB gets explicitly bounded types (`char(n)`, `varchar(n)`, `datetime(6)`, `int`); SQLite gets its
 * native `text`/`integer` with the same bounds enforced by `CHECK (length(...) <= n)` constraints.
 */
export interface ColumnTypes {
  readonly mariadb: boolean;
  char(n: number): RawBuilder<unknown>;
  varchar(n: number): RawBuilder<unknown>;
  datetime(): RawBuilder<unknown>;
  int(): RawBuilder<unknown>;
  /**
   * A text column too long for a `varchar` (MariaDB keeps a row's varchars within 65,535 bytes, and utf8mb4 takes up to
   * 4 bytes a character). MariaDB: `text` when `maxChars` × 4 bytes fit its 65,535, else `mediumtext` (16 MiB); SQLite:
   * `text`. Neither bounds the characters: pair it with {@link ColumnTypes.charLengthCheck}, on both dialects.
   */
  text(maxChars: number): RawBuilder<unknown>;
  /**
   * A CHECK that bounds a column to `maxChars` characters (Unicode code points) on both dialects: MariaDB
   * `CHAR_LENGTH(column) <= n` (its `LENGTH` counts bytes), SQLite `length(column) <= n`.
   */
  charLengthCheck(column: string, maxChars: number): RawBuilder<unknown>;
  /**
   * Table options appended to CREATE TABLE: InnoDB, utf8mb4, `utf8mb4_nopad_bin` — binary and NO PAD, so `alice` and
   * `alice ` (or `Key`/`key`) are different owners and keys, exactly as SQLite compares them.
   */
  tableOptions(): RawBuilder<unknown>;
}

/** The {@link ColumnTypes} of the database `db` talks to. */
export function columnTypes(db: Kysely<any>): ColumnTypes {
  const mariadb = db.getExecutor().adapter instanceof MysqlAdapter;
  return {
    mariadb,
    char: (n) => (mariadb ? sql.raw(`char(${n})`) : sql.raw('text')),
    varchar: (n) => (mariadb ? sql.raw(`varchar(${n})`) : sql.raw('text')),
    datetime: () => (mariadb ? sql.raw('datetime(6)') : sql.raw('text')),
    int: () => (mariadb ? sql.raw('int') : sql.raw('integer')),
    text: (maxChars) => (mariadb ? sql.raw(maxChars * 4 <= 65_535 ? 'text' : 'mediumtext') : sql.raw('text')),
    charLengthCheck: (column, maxChars) => sql.raw(`${mariadb ? 'CHAR_LENGTH' : 'length'}(${column}) <= ${maxChars}`),
    tableOptions: () =>
      mariadb ? sql.raw('ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin') : sql.raw(''),
  };
}

/** A SQLite CHECK that bounds a text column's length (MariaDB enforces the varchar bound itself). */
export function lengthCheck(column: string, max: number): RawBuilder<unknown> {
  return sql.raw(`length(${column}) <= ${max}`);
}

/** Drops an index: MariaDB needs `ON table`, SQLite refuses it. */
export async function dropIndex(db: Kysely<any>, name: string, table: string): Promise<void> {
  const drop = db.schema.dropIndex(name);
  await (columnTypes(db).mariadb ? drop.on(table) : drop).execute();
}
