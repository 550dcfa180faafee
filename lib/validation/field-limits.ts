/**
 * Upper bounds of every stored string (characters) and number. The migrations declare the same bounds in
 * DDL (`varchar(n)`, CHECK constraints); `test/schema-bounds.test.ts` proves the two agree on both databases.
 */
export const FieldLimits = Object.freeze({
  ownerUserId: 128,
  taskType: 64,
  idempotencyKey: 128,
  subjectType: 64,
  subjectId: 128,
  /** Canonical JSON of params, in characters. */
  paramsJson: 4096,
  progressStage: 64,
  failureCode: 64,
  failureMessage: 512,
  /** JSON list of model-call provenance (`MODEL_ATTEMPTS_MAX_CHARS`), in characters. */
  modelAttempts: 1024,
  priority: { min: -1000, max: 1000 },
  maxAttempts: { min: 1, max: 100 },
  manualRetries: { min: 0, max: 1000 },
  progressPercent: { min: 0, max: 100 },
  /**
   * How far ahead an admission may schedule its operation (`delaySeconds`, or `runAt` from the database clock's now), in
   * **seconds**: the hard bound of every task type's `delay.maxSeconds` (30 days). A request bound, not a column: what is
   * stored is the resulting `available_at` (docs/design.md §4, delayed operations).
   */
  delaySeconds: { min: 0, max: 30 * 86_400 },
});

/** Pattern of an `Idempotency-Key`: 1–128 of `[A-Za-z0-9._:-]` (docs/design.md §7). */
export const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/** Pattern of a task type: lower-case, dot- or dash-separated, at most 64 characters (e.g. `demo.wait`). */
export const TASK_TYPE_PATTERN = /^[a-z][a-z0-9_.-]{0,63}$/;

/** Cuts `text` to `max` characters (for operator-only free text such as failure messages). */
export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
