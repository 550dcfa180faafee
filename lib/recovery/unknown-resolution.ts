import { z } from 'zod';
import { SecretInEvidenceError, ValidationError } from '../errors.js';
import { parseOrThrow } from '../validation/parse-or-throw.js';
import { EvidenceSchema, parseEvidence, type Evidence } from './evidence.js';
import { VerificationRequiredError } from './recovery-errors.js';

/**
 * Concrete verification of an outcome (docs/design.md §8): at least one named check, each with the evidence that it passed
 * (an object's digest, a provider's result code, a count). Completion without it is refused.
 */
export interface Verification {
  readonly checks: ReadonlyArray<{ readonly name: string; readonly evidence: Evidence }>;
}

/** Most checks one verification may name. */
export const MAX_VERIFICATION_CHECKS = 16;

/** A check's name: lower-case `[a-z0-9_.-]`, at most 64 characters (e.g. `provider_lookup`), never free text. */
export const VerificationCheckNameSchema = z.string().regex(/^[a-z][a-z0-9_.-]{0,63}$/, 'must be lower-case [a-z0-9_.-], at most 64 characters');

/**
 * What resolves an `outcome_unknown` recovery operation (docs/design.md §8 `resolveUnknown`): `occurred` — true for proof the
 * effect happened, false for proof it did not — and the `verification`: 1–16 checks with unique names, each with
 * non-empty {@link EvidenceSchema} evidence (opaque references, digests, counts, result codes). The operator console
 * validates its form with it; `POST /api/ops/recovery/{id}/resolve-unknown` and `RecoveryHandle.resolveUnknown` parse
 * with it. The schema checks the shape only: {@link parseUnknownResolution} also refuses secret-looking evidence.
 */
export const UnknownResolutionSchema = z
  .strictObject({
    occurred: z.boolean(),
    verification: z.strictObject({
      checks: z
        .array(
          z.strictObject({
            name: VerificationCheckNameSchema,
            evidence: EvidenceSchema.refine((evidence) => Object.keys(evidence).length > 0, 'must hold at least one field'),
          }),
        )
        .min(1, 'must name at least one check')
        .max(MAX_VERIFICATION_CHECKS, `must name at most ${MAX_VERIFICATION_CHECKS} checks`)
        .refine((checks) => new Set(checks.map((check) => check.name)).size === checks.length, 'check names must be unique')
        .readonly(),
    }),
  })
  .meta({ id: 'UnknownResolution' });

/** See {@link UnknownResolutionSchema}. */
export type UnknownResolution = z.infer<typeof UnknownResolutionSchema>;

/**
 * Flattens a verification into one checkpoint's evidence: `checks` names them, `<name>.<key>` holds each check's
 * evidence, and the whole passes `parseEvidence`.
 * @throws {VerificationRequiredError} no check, a repeated name, or a check without evidence.
 * @throws {ValidationError | SecretInEvidenceError} the flattened evidence is invalid or looks like a secret.
 */
export function verificationEvidence(verification: Verification): Evidence {
  const checks = verification?.checks ?? [];
  if (checks.length === 0) throw new VerificationRequiredError('At least one verification check is required.');
  const names = checks.map((c) => c.name);
  if (new Set(names).size !== names.length) throw new VerificationRequiredError('Verification check names must be unique.');
  const flat: Record<string, unknown> = { checks: names };
  for (const check of checks) {
    if (Object.keys(check.evidence ?? {}).length === 0) throw new VerificationRequiredError(`Verification check "${check.name}" has no evidence.`);
    for (const [key, value] of Object.entries(check.evidence)) flat[`${check.name}.${key}`] = value;
  }
  return parseEvidence(flat, 'verification');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Runs `check`, putting `where.` in front of the paths its validation or secret errors name. */
function underPath(where: string, check: () => unknown): void {
  try {
    check();
  } catch (error) {
    if (error instanceof ValidationError) throw new ValidationError(error.message, error.issues.map((issue) => ({ ...issue, path: `${where}.${issue.path}` })));
    if (error instanceof SecretInEvidenceError) throw new SecretInEvidenceError(error.paths.map((path) => `${where}.${path}`), error.kinds);
    throw error;
  }
}

/**
 * Parses an {@link UnknownResolution} at a boundary (an HTTP body), with every problem as a field error: each check's
 * evidence first, through `parseEvidence` (whose errors never echo a key or value that may be a credential), then the
 * shape, then the flattened evidence `resolveUnknown` will record — so whatever would refuse the resolution later
 * refuses it here, before anything is taken over or written.
 * @param where the path prefix of errors, e.g. `body`.
 * @throws {ValidationError} anything invalid, including secret-looking evidence (its paths and kinds, never values).
 */
export function parseUnknownResolution(value: unknown, where: string): UnknownResolution {
  try {
    const checks = isRecord(value) && isRecord(value.verification) ? value.verification.checks : undefined;
    if (Array.isArray(checks)) {
      checks.forEach((check, i) => {
        if (isRecord(check) && 'evidence' in check) parseEvidence(check.evidence, `${where}.verification.checks.${i}.evidence`);
      });
    }
    const resolution = parseOrThrow(UnknownResolutionSchema, value, where);
    underPath(where, () => verificationEvidence(resolution.verification));
    return resolution;
  } catch (error) {
    if (!(error instanceof SecretInEvidenceError)) throw error;
    const issues = error.paths.map((path, i) => ({ path, message: `looks like a credential (${error.kinds[i] ?? 'secret'})` }));
    throw new ValidationError(`Invalid ${where}.`, issues);
  }
}
