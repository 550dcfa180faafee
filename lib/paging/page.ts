import { z } from 'zod';

/** A page size in a query string: 1–100, plain decimal digits only (no `1e2`, `0x10`, `+5`), default 20. */
export const LimitSchema = z
  .string()
  .regex(/^[1-9]\d{0,2}$/, 'must be a whole number 1–100')
  .transform(Number)
  .pipe(z.number().max(100, 'must be a whole number 1–100'))
  .default(20)
  // What a client sends, for the OpenAPI document: the integer the digits spell (the schema itself parses the string).
  .meta({ type: 'integer', minimum: 1, maximum: 100, default: 20, description: 'Page size: 1–100, plain decimal digits.' });

/** A page of rows and the cursor of the next page (null on the last page). */
export interface Page<T> {
  readonly items: T[];
  readonly nextCursor: string | null;
}

/** The first `limit` rows of `rows` (fetched as `limit + 1`) and the cursor of the next page, if there is one. */
export function pageOf<T>(rows: T[], limit: number, cursorOf: (last: T) => string): Page<T> {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > limit && last !== undefined ? cursorOf(last) : null };
}
