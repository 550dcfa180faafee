import { z } from 'zod';
import { FieldLimits } from '../validation/field-limits.js';

/** The two model routes of docs/design.md §5: the local model first, an external provider only as a fallback. */
export type ModelRouteName = 'local' | 'external';

/**
 * One model call of an attempt, as stored in `operations.model_attempts` (docs/design.md §5 provenance): attempt number,
 * route, provider kind (`http`: OpenAI-compatible endpoint; `lambda`: a model sidecar invoked in the account), model
 * name (at most 64 characters) and outcome (`ok` or a bounded model failure code). Never a prompt, an output, a URL
 * or a key. Operator-only: no DTO carries it.
 */
export const ModelAttemptSchema = z.strictObject({
  attempt: z.number().int().min(1).max(100),
  route: z.enum(['local', 'external']),
  provider: z.enum(['http', 'lambda']),
  model: z.string().min(1).max(64),
  outcome: z.string().regex(/^[a-z_]{1,32}$/),
});

/** See {@link ModelAttemptSchema}. */
export type ModelAttempt = z.infer<typeof ModelAttemptSchema>;

/** Characters of `operations.model_attempts` (the column is `varchar(1024)`, `FieldLimits.modelAttempts`). */
export const MODEL_ATTEMPTS_MAX_CHARS = FieldLimits.modelAttempts;

/** Entries kept: the newest ones; older ones are dropped first. */
export const MODEL_ATTEMPTS_KEPT = 8;

/**
 * Reads the stored provenance list; a missing or unreadable value reads as empty (it is evidence for operators, never
 * an input to a decision).
 */
export function parseModelAttempts(stored: string | null): ModelAttempt[] {
  if (stored === null) return [];
  try {
    const parsed = z.array(ModelAttemptSchema).safeParse(JSON.parse(stored));
    return parsed.success ? parsed.data : [];
  } catch {
    return [];
  }
}

/**
 * The stored list with `entry` appended, as JSON of at most {@link MODEL_ATTEMPTS_MAX_CHARS} characters: the newest
 * {@link MODEL_ATTEMPTS_KEPT} entries, fewer when they would not fit.
 * @throws {import('zod').ZodError} when `entry` is malformed (a programming error).
 */
export function appendModelAttempt(stored: string | null, entry: ModelAttempt): string {
  let entries = [...parseModelAttempts(stored), ModelAttemptSchema.parse(entry)].slice(-MODEL_ATTEMPTS_KEPT);
  let json = JSON.stringify(entries);
  while (json.length > MODEL_ATTEMPTS_MAX_CHARS && entries.length > 1) {
    entries = entries.slice(1);
    json = JSON.stringify(entries);
  }
  return json;
}
