import { z } from 'zod';

/** How big a chaos run is. Times in **seconds** unless the name says ms. */
export interface ChaosOptions {
  readonly mode: 'quick' | 'full';
  /** Fault-and-load phase length. */
  readonly durationSeconds: number;
  /** Worker processes. */
  readonly workers: number;
  /** Admissions started per second. */
  readonly rate: number;
  /** Mean pause between random faults, in ms. */
  readonly faultEveryMs: number;
  /** MariaDB crash-restarts, spread evenly over the fault phase (at least one). */
  readonly restarts: number;
  /**
   * Network partitions (one worker cut off from MariaDB for longer than a lease), spread evenly over the fault phase,
   * each about 30 s after the previous.
   */
  readonly partitions: number;
  /** Longest wait for every operation to settle after the fault phase. */
  readonly drainSeconds: number;
  /**
   * Seed of the random choices (faults, targets, params). Printed with the summary; the load loops and the injector
   * draw from it concurrently, so timing still makes two runs with one seed differ.
   */
  readonly seed: number;
  /** Keep the private server's data directory (the server is stopped); the logs in `.chaos/` are always kept. */
  readonly keep: boolean;
}

/** The `npm run chaos` usage text. */
export const USAGE = `usage: npm run chaos [-- --quick] [--duration S] [--workers N] [--rate R] [--restarts N] [--partitions N] [--seed N] [--keep]
  --quick         60 s of faults, 3 workers, 8 admissions/s, 1 MariaDB restart, 2 network partitions (under 2 minutes in all)
  (default)       600 s of faults, 4 workers, 10 admissions/s, a MariaDB restart every ~55 s, a partition every ~30 s
  --duration S    fault phase in seconds (10..7200)      --workers N  worker processes (1..16)
  --rate R        admissions per second (1..200)         --restarts N MariaDB crash-restarts (1..100)
  --partitions N  network partitions (0..500)            --seed N     seed of the random choices
  --keep          keep the server's data directory
Runs on a private MariaDB server it starts on a free loopback port (needs mariadbd and mariadb-install-db).`;

const Numbers = z.object({
  duration: z.coerce.number().int().min(10).max(7200).optional(),
  workers: z.coerce.number().int().min(1).max(16).optional(),
  rate: z.coerce.number().min(1).max(200).optional(),
  restarts: z.coerce.number().int().min(1).max(100).optional(),
  partitions: z.coerce.number().int().min(0).max(500).optional(),
  seed: z.coerce.number().int().min(0).max(2 ** 32 - 1).optional(),
});

/** Thrown for a bad command line; its message is the problem (empty for `--help`). */
export class UsageError extends Error {}

/**
 * Parses `npm run chaos` arguments.
 * @throws {UsageError} for an unknown option or an out-of-range value.
 */
export function parseChaosArgs(argv: readonly string[]): ChaosOptions {
  let quick = false;
  let keep = false;
  const values: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--quick') quick = true;
    else if (arg === '--keep') keep = true;
    else if (arg === '--help' || arg === '-h') throw new UsageError('');
    else {
      const match = /^--(duration|workers|rate|restarts|partitions|seed)(?:=(.*))?$/.exec(arg);
      if (!match) throw new UsageError(`unknown option ${arg}`);
      const value = match[2] ?? argv[++i];
      if (value === undefined) throw new UsageError(`${arg} needs a value`);
      values[match[1] as string] = value;
    }
  }
  const parsed = Numbers.safeParse(values);
  if (!parsed.success) throw new UsageError(parsed.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('; '));
  const n = parsed.data;
  const durationSeconds = n.duration ?? (quick ? 60 : 600);
  return {
    mode: quick ? 'quick' : 'full',
    durationSeconds,
    workers: n.workers ?? (quick ? 3 : 4),
    rate: n.rate ?? (quick ? 8 : 10),
    faultEveryMs: quick ? 500 : 1_000,
    restarts: n.restarts ?? (quick ? 1 : Math.max(1, Math.round(durationSeconds / 55))),
    partitions: n.partitions ?? Math.max(1, Math.round(durationSeconds / 30)),
    drainSeconds: quick ? 30 : 120,
    seed: n.seed ?? Math.floor(Math.random() * 2 ** 32),
    keep,
  };
}
