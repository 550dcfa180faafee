import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { JobNotFoundError } from '../errors.js';
import { assertOwnerScope, type OwnerScope } from '../operations/scopes.js';
import { parseOrThrow } from '../validation/parse-or-throw.js';
import { charCount, isWellFormedText, JobLimits } from './job-limits.js';
import { findOwnedJob, insertJob, type JobRow } from './job.repository.js';

/** A job id: a lower-case UUID (as `randomUUID` makes them). */
export const JobIdSchema = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'must be a job id');

/** C0 control characters and DEL: none belongs in a one-line label. */
const CONTROL_CHARACTER = /[\u0000-\u001F\u007F]/;

/**
 * A one-line label (title, company): trimmed of leading and trailing whitespace — never meaningful in a label, and a
 * label of spaces only is empty — then 1–`max` characters (code points, see `JobLimits`), no control characters,
 * well-formed Unicode. The trimmed text is what is stored.
 */
function labelSchema(max: number) {
  return z
    .string()
    .trim()
    .min(1, 'must not be empty')
    .refine((text) => charCount(text) <= max, `must be at most ${max} characters`)
    .refine((text) => !CONTROL_CHARACTER.test(text), 'must be one line of text without control characters')
    .refine(isWellFormedText, 'must be well-formed Unicode text');
}

/**
 * The body of `POST /api/jobs`: exactly `{title, company, description}`, all strings; any other key is refused.
 *
 * - `title`, `company`: trimmed, then 1–200 characters on one line.
 * - `description`: stored exactly as sent — not trimmed, because it is raw text an AI feature reads and its layout
 *   (indentation, blank lines) may carry meaning — 1–20,000 characters, not only whitespace, no NUL character.
 *
 * Characters are Unicode code points, counted as both databases count them (`JobLimits`), so 20,000 emoji fit. Lone
 * surrogates are refused everywhere: they could not be stored intact.
 */
export const CreateJobSchema = z.strictObject({
  title: labelSchema(JobLimits.title),
  company: labelSchema(JobLimits.company),
  description: z
    .string()
    .refine((text) => text.trim().length > 0, 'must not be empty or only whitespace')
    .refine((text) => charCount(text) <= JobLimits.description, `must be at most ${JobLimits.description} characters`)
    .refine((text) => !text.includes('\u0000'), 'must not contain NUL characters')
    .refine(isWellFormedText, 'must be well-formed Unicode text'),
}).meta({ id: 'CreateJob' });

/** See {@link CreateJobSchema} (the validated, trimmed values). */
export type CreateJob = z.output<typeof CreateJobSchema>;

/**
 * Creates a job for the authenticated owner (docs/design.md §3: the row carries the scope's owner id, never one from the body)
 * and returns its row (read back: MariaDB has no RETURNING). Each call creates a new job: there is no idempotency key,
 * so a client that retries a POST whose answer it lost gets two.
 * @throws {ValidationError} when `input` is not a valid {@link CreateJobSchema} body; nothing is written.
 * @throws {ScopeViolationError} when `scope` is not an owner scope (e.g. the worker scope cast past the types).
 */
export async function createJob(scope: OwnerScope, input: unknown): Promise<JobRow> {
  assertOwnerScope(scope);
  const job = parseOrThrow(CreateJobSchema, input, 'body');
  const id = randomUUID();
  await insertJob(scope.store, { id, owner_user_id: scope.ownerUserId, title: job.title, company: job.company, description: job.description });
  const row = await findOwnedJob(scope.store, scope.ownerUserId, id);
  if (!row) throw new Error(`Job ${id} vanished right after its insert`);
  return row;
}

/**
 * The owner's job `jobId`; the query filters by the scope's owner (docs/design.md §3).
 * @throws {JobNotFoundError} when it does not exist, belongs to another owner, or `jobId` is not a job id at all — all
 * three indistinguishable (docs/design.md §7: 404, never 403), as `getOperation` treats operation ids.
 * @throws {ScopeViolationError} when `scope` is not an owner scope.
 */
export async function getJob(scope: OwnerScope, jobId: unknown): Promise<JobRow> {
  assertOwnerScope(scope);
  const parsed = JobIdSchema.safeParse(jobId);
  const row = parsed.success ? await findOwnedJob(scope.store, scope.ownerUserId, parsed.data) : undefined;
  if (!row) throw new JobNotFoundError(String(jobId));
  return row;
}
