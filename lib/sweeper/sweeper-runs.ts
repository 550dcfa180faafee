import { z } from 'zod';
import type { DbContext } from '../db/database.js';
import { parseDbTime } from '../db/db-time.js';
import type { Store } from '../db/store.js';
import { inTransaction } from '../db/transaction.js';
import { describeError, type Logger } from '../logger.js';
import { LimitSchema } from '../paging/page.js';
import { parseOrThrow } from '../validation/parse-or-throw.js';
import { SweepCountsSchema, type SweepCounts } from './sweep-counts.js';
import { deleteSweeperRuns, insertSweeperRun, listLatestSweeperRuns, selectSweeperRunsOlderThan, type SweeperRunRow } from './sweeper-run.repository.js';

/** How long a sweeper run's record is kept, in **milliseconds**: 7 days. */
export const SWEEPER_RUN_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/** Longest counts JSON a record may hold, in characters (the `sweeper_runs.counts` column). */
export const MAX_SWEEP_COUNTS_JSON = 1024;

/** What recording a run needs: the store, where a failure is logged, and the trim's batch size. */
export interface SweeperRunRecorder {
  readonly store: Store;
  readonly logger: Logger;
  /** Most expired records one run deletes. */
  readonly batchSize: number;
}

/**
 * Records one finished sweeper run — started `durationMs` **milliseconds** before now, finished now (database clock) —
 * and, in the same transaction, deletes up to `batchSize` records older than {@link SWEEPER_RUN_RETENTION_MS}: one
 * row in per run and up to a batch out, so the table stays at about 7 days of runs. Never throws: the run's work is
 * already committed, so a failure to record it is logged as a warning (`sweep not recorded`) and nothing else.
 */
export async function recordSweeperRun(recorder: SweeperRunRecorder, counts: SweepCounts, durationMs: number): Promise<void> {
  try {
    const json = JSON.stringify(SweepCountsSchema.parse(counts));
    if (json.length > MAX_SWEEP_COUNTS_JSON) throw new RangeError(`sweep counts JSON is ${json.length} characters, more than ${MAX_SWEEP_COUNTS_JSON}`);
    await inTransaction(recorder.store, async (tx) => {
      await insertSweeperRun(tx, durationMs, json);
      await deleteSweeperRuns(tx, await selectSweeperRunsOlderThan(tx, SWEEPER_RUN_RETENTION_MS, recorder.batchSize));
    });
  } catch (error) {
    recorder.logger.warn('sweep not recorded', describeError(error));
  }
}

/** Query of `GET /api/ops/sweeps`: `limit` 1–100 (plain decimal digits), @default 20. */
export const SweepListQuerySchema = z.strictObject({ limit: LimitSchema });

/** One recorded sweeper run: `startedAt`, `finishedAt` (ISO-8601 UTC, database clock) and its counts. */
export const SweeperRunDtoSchema = z.strictObject({
  startedAt: z.string().datetime(),
  finishedAt: z.string().datetime(),
  counts: SweepCountsSchema,
});

/** See {@link SweeperRunDtoSchema}. */
export type SweeperRunDto = z.infer<typeof SweeperRunDtoSchema>;

/** Body of `GET /api/ops/sweeps`: at most 100 recorded runs, newest first. */
export const SweeperRunPageDtoSchema = z.strictObject({ items: z.array(SweeperRunDtoSchema).max(100) }).meta({ id: 'SweeperRunPage' });

/** A row as its DTO, or `undefined` when its stored counts no longer parse (a row written by another release). */
function toDto(row: SweeperRunRow): SweeperRunDto | undefined {
  let stored: unknown;
  try {
    stored = JSON.parse(row.counts);
  } catch {
    return undefined;
  }
  const counts = SweepCountsSchema.safeParse(stored);
  if (!counts.success) return undefined;
  return { startedAt: parseDbTime(row.started_at).toISOString(), finishedAt: parseDbTime(row.finished_at).toISOString(), counts: counts.data };
}

/**
 * The latest recorded sweeper runs, newest first (operators only: the route needs `ops:read`). Runs older than 7 days
 * are gone (see {@link recordSweeperRun}); a run whose stored counts do not match today's shape (written by another
 * release) is left out rather than failing the whole list.
 * @param query see {@link SweepListQuerySchema}; a query string's parameters may be passed as they are.
 * @throws {ValidationError} for an unknown key or a limit outside 1–100.
 */
export async function listSweeperRuns(ctx: DbContext, query: unknown): Promise<SweeperRunDto[]> {
  const { limit } = parseOrThrow(SweepListQuerySchema, query, 'query');
  return (await listLatestSweeperRuns(ctx, limit)).map(toDto).filter((dto): dto is SweeperRunDto => dto !== undefined);
}
