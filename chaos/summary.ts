import type { LoadCounts } from './admission-load.js';
import type { FaultKind } from './faults.js';
import { INVARIANTS, type CheckResult, type InvariantName, type Violation } from './invariants.js';
import type { ChaosOptions } from './options.js';

/** The machine-readable result of a chaos run: the last line `npm run chaos` prints. */
export interface ChaosSummary {
  readonly mode: ChaosOptions['mode'];
  readonly seed: number;
  /** From the first admission to the history read, in **s** (start-up and shutdown not included). */
  readonly seconds: number;
  readonly workers: number;
  /** Operations in the database at the end (every admitted one, plus any whose answer was lost). */
  readonly operations: number;
  readonly admissions: LoadCounts;
  readonly statuses: Readonly<Record<string, number>>;
  readonly effects: number;
  /** Handler runs started; more than `effects`: work runs at least once per claim, commits once. */
  readonly executions: number;
  /** Succeeded operations whose handler ran more than once. */
  readonly reExecutedSuccesses: number;
  readonly notifications: number;
  readonly transitions: number;
  /** External calls the chaos task made to the harness's recording service. */
  readonly externalCalls: number;
  /**
   * Over leases that expired (the attempt lost its lease rather than ending it), the least (lease end − arrival) of
   * their calls, in **ms** (negative: a call outlived its lease; about the fence margin when the fence works); null: none.
   */
  readonly closestCallToExpiryMs: number | null;
  /** Faults that took effect, by kind (`network_partition`: a worker cut off from MariaDB past the lease). */
  readonly faults: Readonly<Record<FaultKind, number>>;
  readonly faultErrors: Readonly<Record<string, number>>;
  readonly sweepErrors: number;
  /**
   * Every API answer of the run (admissions, cancels, retries) by `answerKey`; `500` and `503` are always present:
   * a 503 is a database outage answered as one (allowed), a 500 breaks the `noInternalError` invariant.
   */
  readonly apiAnswers: Readonly<Record<string, number>>;
  /** Worker processes that exited on their own (a crash of the code under test; the run fails). */
  readonly workerCrashes: number;
  /** Operations still active when the history was read. */
  readonly stillActive: number;
  readonly violations: number;
  readonly violationsByInvariant: Readonly<Partial<Record<InvariantName, number>>>;
  /** The first few violations. */
  readonly violationDetails: readonly Violation[];
  readonly historyFile: string;
}

/** Input of {@link summaryOf}. */
export interface SummaryInput {
  readonly options: ChaosOptions;
  readonly seconds: number;
  readonly load: LoadCounts;
  readonly faults: Record<FaultKind, number>;
  readonly faultErrors: Record<string, number>;
  readonly sweepErrors: number;
  readonly apiAnswers: Readonly<Record<string, number>>;
  readonly workerCrashes: number;
  readonly check: CheckResult;
  readonly historyFile: string;
}

/** Builds the {@link ChaosSummary} of a run. */
export function summaryOf(input: SummaryInput): ChaosSummary {
  const byInvariant: Partial<Record<InvariantName, number>> = {};
  for (const v of input.check.violations) byInvariant[v.invariant] = (byInvariant[v.invariant] ?? 0) + 1;
  return {
    mode: input.options.mode,
    seed: input.options.seed,
    seconds: Math.round(input.seconds),
    workers: input.options.workers,
    operations: Object.values(input.check.statuses).reduce((a, b) => a + b, 0),
    admissions: input.load,
    statuses: input.check.statuses,
    effects: input.check.effects,
    executions: input.check.executions,
    reExecutedSuccesses: input.check.reExecutedSuccesses,
    notifications: input.check.notifications,
    transitions: input.check.transitions,
    externalCalls: input.check.externalCalls,
    closestCallToExpiryMs: input.check.closestCallToExpiryMs,
    faults: input.faults,
    faultErrors: input.faultErrors,
    sweepErrors: input.sweepErrors,
    apiAnswers: { '500': 0, '503': 0, ...input.apiAnswers },
    workerCrashes: input.workerCrashes,
    stillActive: input.check.stillActive,
    violations: input.check.violations.length,
    violationsByInvariant: byInvariant,
    violationDetails: input.check.violations.slice(0, 10),
    historyFile: input.historyFile,
  };
}

/** The human-readable summary: operations, faults by kind, each invariant with its violation count. */
export function renderSummary(s: ChaosSummary): string {
  const lines = [
    `chaos ${s.mode} run: ${s.seconds} s, ${s.workers} worker processes, seed ${s.seed}`,
    `operations ${s.operations} (${Object.entries(s.statuses).map(([k, v]) => `${k} ${v}`).join(', ')}); still active after drain: ${s.stillActive}`,
    `handler runs ${s.executions} for ${s.effects} committed successes (${s.reExecutedSuccesses} successes ran more than once: at least once per claim, committed once); worker crashes ${s.workerCrashes}`,
    `external calls ${s.externalCalls}${
      s.closestCallToExpiryMs === null
        ? ''
        : `; of attempts whose lease expired, the latest call arrived ${s.closestCallToExpiryMs >= 0 ? `${s.closestCallToExpiryMs} ms before` : `${-s.closestCallToExpiryMs} ms after`} its lease ended`
    }`,
    `admissions: ${s.admissions.keys} keys, ${s.admissions.admitted} admitted, ${s.admissions.doubleClicks} double clicks, ${s.admissions.refused} refused, ${s.admissions.unanswered} unanswered; answers ${JSON.stringify(s.admissions.answers)}`,
    `API answers: 503 (database unavailable) ${s.apiAnswers['503'] ?? 0}, 500 (internal error) ${s.apiAnswers['500'] ?? 0}; all ${JSON.stringify(s.apiAnswers)}`,
    'faults injected:',
    ...Object.entries(s.faults).map(([k, v]) => `  ${k.padEnd(18)} ${String(v).padStart(6)}`),
    'invariants:',
    ...Object.entries(INVARIANTS).map(([name, text]) => `  ${String(s.violationsByInvariant[name as InvariantName] ?? 0).padStart(6)}  ${text}`),
    `violations: ${s.violations}`,
    ...s.violationDetails.map((v) => `  - ${v.invariant} ${v.operationId ?? ''}: ${v.detail}`),
  ];
  return lines.join('\n');
}
