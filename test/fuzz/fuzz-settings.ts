import type { Parameters } from 'fast-check';

/**
 * The fast-check parameters every property suite under `test/fuzz/` runs with: one fixed seed, a bounded number of
 * runs, and a time cap, so `npm test` is deterministic and its wall time bounded.
 *
 * Environment:
 * - `FUZZ_SEED` — the seed (an integer). @default {@link DEFAULT_FUZZ_SEED}
 * - `FUZZ_RUNS` — runs per property, instead of each property's own default (e.g. `FUZZ_RUNS=500` for a long soak).
 * - `FUZZ_PATH` — replays exactly one counterexample (fast-check's `path`); set it together with its `FUZZ_SEED`.
 *
 * **Replaying a failure.** A failing property throws fast-check's own report, which vitest prints in full:
 * ```
 * Property failed after 7 tests
 * { seed: 20261201, path: "6:2:0", endOnFailure: true }
 * Counterexample: [...]
 * ```
 * Run that one test again with the seed and path it names, selecting it by (part of) the name vitest prints in its
 * `FAIL` line, so the path is not applied to the file's other properties:
 * ```
 * FUZZ_SEED=20261201 FUZZ_PATH=6:2:0 npx vitest run test/fuzz/transitions.fuzz.test.ts -t 'real operations on mariadb'
 * ```
 * Every property resets the database it uses at the start of each run, so a replay sees the same state.
 *
 * The assertion is never wrapped: `await fc.assert(...)` lets the report (seed, path, counterexample, the failing
 * `expect`) reach vitest unchanged. Shrinking stops at {@link FUZZ_TIME_LIMIT_MS}, well inside {@link FUZZ_TEST_TIMEOUT_MS},
 * so even a slow shrink ends in a report instead of a vitest timeout that would hide the seed.
 */

/** The seed used when `FUZZ_SEED` is not set. */
export const DEFAULT_FUZZ_SEED = 20_261_201;

function integerFromEnv(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const value = Number(raw);
  if (!Number.isSafeInteger(value)) throw new Error(`${name} must be an integer, got ${JSON.stringify(raw)}`);
  return value;
}

/** The seed of this run: `FUZZ_SEED`, else {@link DEFAULT_FUZZ_SEED}. */
export const FUZZ_SEED = integerFromEnv('FUZZ_SEED') ?? DEFAULT_FUZZ_SEED;

/** Upper bound on the runs of one property, whatever `FUZZ_RUNS` says. */
const MAX_RUNS = 10_000;

/**
 * Wall time, in **ms**, after which fast-check starts no further run of a property (nor shrink step). A property
 * that reaches it without a failure passes with the runs it made; one that had failed reports its smallest
 * counterexample so far. The defaults below finish far inside it.
 */
export const FUZZ_TIME_LIMIT_MS = 50_000;

/** Vitest timeout for one property test, in **ms**: above {@link FUZZ_TIME_LIMIT_MS} plus one slow run. */
export const FUZZ_TEST_TIMEOUT_MS = 110_000;

/**
 * The fast-check parameters of one property.
 * @param defaultRuns runs when `FUZZ_RUNS` is not set: keep it small enough for the suite's time budget.
 * @returns `{ seed, numRuns, path?, interruptAfterTimeLimit }` for `fc.assert`.
 */
export function fuzzParameters<Ts>(defaultRuns: number): Parameters<Ts> {
  const runs = Math.min(MAX_RUNS, Math.max(1, integerFromEnv('FUZZ_RUNS') ?? defaultRuns));
  const path = process.env.FUZZ_PATH?.trim();
  return {
    seed: FUZZ_SEED,
    numRuns: runs,
    ...(path ? { path } : {}),
    interruptAfterTimeLimit: FUZZ_TIME_LIMIT_MS,
  };
}

/**
 * True when a property ran as {@link fuzzParameters}`(defaultRuns)` describes with the default seed: at least the
 * default runs, all of them made (`runsMade`: not cut short by {@link FUZZ_TIME_LIMIT_MS}), no replay path. Only such
 * runs assert *coverage* (that the generator still reached the branches a suite is about): that outcome is fixed by the
 * seed, so it never flakes, while a soak run under another `FUZZ_SEED` still checks every property.
 */
export function assertsCoverage(parameters: Pick<Parameters<never>, 'seed' | 'path' | 'numRuns'>, defaultRuns: number, runsMade: number): boolean {
  const runs = parameters.numRuns ?? 0;
  return parameters.seed === DEFAULT_FUZZ_SEED && parameters.path === undefined && runs >= defaultRuns && runsMade >= runs;
}
