import { z } from 'zod';
import type { DbContext } from '../../db/database.js';
import { databaseNow } from '../../db/database-clock.js';
import { parseDbTime } from '../../db/db-time.js';
import { countEventsPerMinute } from '../store/operation-event.repository.js';
import { parseOrThrow } from '../../validation/parse-or-throw.js';

/** Most minutes one throughput read covers: a day. */
export const MAX_THROUGHPUT_MINUTES = 1440;

const MINUTES_MESSAGE = `must be a whole number 1–${MAX_THROUGHPUT_MINUTES}`;

/**
 * Query of `GET /api/ops/throughput`: `minutes`, 1–1440 as plain decimal digits, @default 60 — how many whole minutes
 * to report, ending with the current one (database clock).
 */
export const ThroughputQuerySchema = z.strictObject({
  minutes: z
    .string()
    .regex(/^[1-9]\d{0,3}$/, MINUTES_MESSAGE)
    .transform(Number)
    .pipe(z.number().max(MAX_THROUGHPUT_MINUTES, MINUTES_MESSAGE))
    .default(60)
    .meta({ type: 'integer', minimum: 1, maximum: MAX_THROUGHPUT_MINUTES, default: 60, description: 'Minutes to report, ending now: 1–1440.' }),
});

const count = z.number().int().min(0);

/**
 * One minute of throughput: `minute` is its start (ISO-8601 UTC, seconds zero); `admitted` counts new operations (not
 * owner retries), `succeeded` / `failed` / `cancelled` the operations that reached that state in the minute (an
 * operation retried and failed twice counts twice).
 */
export const ThroughputBucketSchema = z.strictObject({
  minute: z.string().datetime(),
  admitted: count,
  succeeded: count,
  failed: count,
  cancelled: count,
});

/** Body of `GET /api/ops/throughput`: one bucket per minute, oldest first, zero-filled. */
export const ThroughputDtoSchema = z
  .strictObject({ buckets: z.array(ThroughputBucketSchema).max(MAX_THROUGHPUT_MINUTES) })
  .meta({ id: 'ThroughputDto' });

/** See {@link ThroughputDtoSchema}. */
export type ThroughputDto = z.infer<typeof ThroughputDtoSchema>;

/** Which bucket field an event's `to_status` counts in (`queued`: admissions only, see `countEventsPerMinute`). */
const FIELD_OF = { queued: 'admitted', succeeded: 'succeeded', failed: 'failed', cancelled: 'cancelled' } as const;

const MINUTE_MS = 60_000;

/**
 * Operations admitted, succeeded, failed and cancelled per minute over the last `minutes` minutes (the current minute
 * included, so it is still filling), from `operation_events` on the database clock: one bucket per minute, oldest
 * first, zero-filled. Operators only (the route needs `ops:read`).
 * @param query see {@link ThroughputQuerySchema}; a query string's parameters may be passed as they are.
 * @throws {ValidationError} for an unknown key or `minutes` outside 1–1440.
 */
export async function getThroughput(ctx: DbContext, query: unknown): Promise<ThroughputDto> {
  const { minutes } = parseOrThrow(ThroughputQuerySchema, query, 'query');
  const now = parseDbTime(await databaseNow(ctx)).getTime();
  const first = now - (now % MINUTE_MS) - (minutes - 1) * MINUTE_MS;
  const keyOf = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');
  const buckets = Array.from({ length: minutes }, (_, i) => {
    const start = first + i * MINUTE_MS;
    return { minute: new Date(start).toISOString(), admitted: 0, succeeded: 0, failed: 0, cancelled: 0 };
  });
  const index = new Map(buckets.map((bucket, i) => [keyOf(first + i * MINUTE_MS), bucket]));
  const since = `${keyOf(first)}:00.000`;
  for (const row of await countEventsPerMinute(ctx, since, Object.keys(FIELD_OF))) {
    const bucket = index.get(row.minute);
    const field = FIELD_OF[row.toStatus as keyof typeof FIELD_OF];
    if (bucket && field) bucket[field] += row.count;
  }
  return { buckets };
}
