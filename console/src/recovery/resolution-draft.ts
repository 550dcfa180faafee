import { UnknownResolutionSchema } from '../../../lib/recovery/unknown-resolution.js';

/** How an evidence value is typed in the form: evidence holds strings, finite numbers and booleans. */
export type EvidenceValueType = 'text' | 'number' | 'boolean';

/** One evidence field as typed: a key, its type and its text. */
export interface EvidenceFieldDraft {
  readonly key: string;
  readonly type: EvidenceValueType;
  readonly value: string;
}

/** One verification check as typed: its name and its evidence fields. */
export interface CheckDraft {
  readonly name: string;
  readonly fields: readonly EvidenceFieldDraft[];
}

/** The evidence form as typed: whether the effect happened (not chosen yet: `''`) and the checks that show it. */
export interface ResolutionDraft {
  readonly occurred: '' | 'yes' | 'no';
  readonly checks: readonly CheckDraft[];
}

/** An empty draft: one check with one text field. */
export function emptyDraft(): ResolutionDraft {
  return { occurred: '', checks: [{ name: '', fields: [{ key: '', type: 'text', value: '' }] }] };
}

/** The result of {@link validateDraft}: the request body to send, or what is wrong. */
export type DraftValidation = { readonly ok: true; readonly resolution: unknown } | { readonly ok: false; readonly issues: readonly string[] };

function valueOf(field: EvidenceFieldDraft): string | number | boolean {
  if (field.type === 'number') return field.value.trim() === '' ? Number.NaN : Number(field.value);
  if (field.type === 'boolean') return field.value === 'true';
  return field.value;
}

/** `verification.checks.0.evidence.x` → `check 1 › evidence › x`, for people. */
function pathLabel(path: readonly PropertyKey[]): string {
  const parts = path.map(String);
  if (parts[0] === 'verification' && parts[1] === 'checks' && parts[2] !== undefined && /^\d+$/.test(parts[2])) {
    return [`check ${Number(parts[2]) + 1}`, ...parts.slice(3)].join(' › ');
  }
  return parts.join(' › ') || 'resolution';
}

/**
 * Turns the typed form into the `POST /api/ops/recovery/{id}/resolve-unknown` body and validates it client-side with
 * the library's own `UnknownResolutionSchema` (lib/recovery), so the operator sees the same rules the API applies
 * before anything is sent. The API validates again (and also refuses secret-looking evidence).
 */
export function validateDraft(draft: ResolutionDraft): DraftValidation {
  const issues: string[] = [];
  if (draft.occurred === '') issues.push('Choose whether the effect happened.');
  draft.checks.forEach((check, index) => {
    const keys = check.fields.map((field) => field.key.trim());
    const repeated = keys.filter((key, i) => key !== '' && keys.indexOf(key) !== i);
    for (const key of new Set(repeated)) issues.push(`check ${index + 1}: the evidence key "${key}" appears more than once.`);
    if (check.name.trim() === '') issues.push(`check ${index + 1} › name: required.`);
    check.fields.forEach((field, at) => {
      if (field.key.trim() === '') issues.push(`check ${index + 1} › evidence key ${at + 1}: required.`);
      if (field.type === 'number' && !Number.isFinite(valueOf(field))) issues.push(`check ${index + 1} › ${field.key.trim() || 'a field'}: not a number.`);
    });
  });
  const resolution = {
    occurred: draft.occurred === 'yes',
    verification: {
      checks: draft.checks.map((check) => ({
        name: check.name.trim(),
        evidence: Object.fromEntries(check.fields.map((field) => [field.key.trim(), valueOf(field)])),
      })),
    },
  };
  try {
    const parsed = UnknownResolutionSchema.safeParse(resolution);
    // An empty name or key is already reported above, more plainly than the schema can.
    const reported = (path: readonly PropertyKey[]) => path.at(-1) === '' || (path.at(-1) === 'name' && draft.checks[Number(path[2])]?.name.trim() === '');
    if (!parsed.success) issues.push(...parsed.error.issues.filter((issue) => !reported(issue.path)).map((issue) => `${pathLabel(issue.path)}: ${issue.message}`));
  } catch {
    issues.push('The evidence could not be checked here; correct it or try again.');
  }
  return issues.length > 0 ? { ok: false, issues: [...new Set(issues)].slice(0, 20) } : { ok: true, resolution };
}
