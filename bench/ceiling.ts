import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Cleanups } from './cleanups.js';
import { cpuWindow, type CpuPerOp } from './cpu.js';
import { benchPool, CommitCounter } from './mariadb.js';

/** What {@link runCeiling} measured. */
export interface CeilingResult {
  readonly concurrency: number;
  readonly seconds: number;
  readonly updates: number;
  /** Committed single-row UPDATEs per second: the raw write ceiling of the server. */
  readonly updatesPerSec: number;
  /** `trx_rw_commits` delta ÷ updates: 1.0 when no other client committed meanwhile (a calibration of the counter). */
  readonly commitCounterPerUpdate: number;
  /** CPU per UPDATE over the timed window (bench process: mysql2; server: MariaDB). */
  readonly cpu: CpuPerOp;
}

/**
 * The raw ceiling: committed single-row UPDATEs per second at `concurrency` connections on the same
 * MariaDB server. Its own table of `concurrency` rows; each connection (a mysql2 pool of `concurrency`) updates its
 * own row in autocommit, back to back, for `durationMs`, so no two statements ever wait on one row lock: what limits
 * it is the commit (redo log write and flush) and the round trip, the cost every durable-ops commit pays too.
 * @param databaseUrl a `mysql://` URL of a benchmark database (the table is created in it).
 */
export async function runCeiling(
  databaseUrl: string,
  options: { concurrency: number; durationMs: number; serverUrl: string; cleanups?: Cleanups },
): Promise<CeilingResult> {
  const pool = benchPool(databaseUrl, options.concurrency);
  const counter = await CommitCounter.open(options.serverUrl, options.cleanups);
  try {
    await pool.query('CREATE TABLE bench_ceiling (id INT PRIMARY KEY, n BIGINT NOT NULL) ENGINE=InnoDB');
    const ids = Array.from({ length: options.concurrency }, (_, i) => i);
    await pool.query('INSERT INTO bench_ceiling (id, n) VALUES ?', [ids.map((id) => [id, 0])]);
    // Open every connection before timing.
    await Promise.all(ids.map(() => pool.query('SELECT 1')));
    const before = await counter.read();
    const cpu = cpuWindow('mariadb', availableParallelism());
    const started = performance.now();
    const until = started + options.durationMs;
    const counts = await Promise.all(
      ids.map(async (id) => {
        const connection = await pool.getConnection();
        try {
          let n = 0;
          while (performance.now() < until) {
            await connection.query('UPDATE bench_ceiling SET n = n + 1 WHERE id = ?', [id]);
            n++;
          }
          return n;
        } finally {
          connection.release();
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const updates = counts.reduce((a, b) => a + b, 0);
    const cpuPerUpdate = cpu(updates);
    const after = await counter.read();
    return {
      concurrency: options.concurrency,
      seconds,
      updates,
      updatesPerSec: updates / seconds,
      commitCounterPerUpdate: (after.rwCommits - before.rwCommits) / updates,
      cpu: cpuPerUpdate,
    };
  } finally {
    await counter.close();
    await pool.end();
  }
}
