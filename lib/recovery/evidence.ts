import { z } from 'zod';
import { SecretInEvidenceError, ValidationError, type ValidationIssue } from '../errors.js';
import { detectSecret, findSecretsInEvidence } from './secret-detector.js';

/**
 * Bounds of one evidence (or metadata) object. Lengths are counted in UTF-16 code units (JavaScript
 * `string.length`), the same unit the schema checks.
 */
export const EvidenceLimits = Object.freeze({
  /** At most this many keys in one evidence object. */
  keys: 32,
  /** At most this many characters in one key. */
  keyLength: 64,
  /** At most this many characters in one string value (or array item). */
  stringLength: 512,
  /** At most this many items in one array value. */
  arrayItems: 32,
});

const KEY_PATTERN = /^[a-zA-Z][a-zA-Z0-9_.-]{0,63}$/;

const KEY_MESSAGE = 'key must start with a letter and hold at most 64 letters, digits, "_", "." or "-"';
const VALUE_MESSAGE =
  'must be a string (at most 512 characters), a finite number, a boolean, null, or an array of at most 32 of those (no nested objects)';
const ITEM_MESSAGE = 'array items must be a string (at most 512 characters), a finite number, a boolean or null';
const STRING_MESSAGE = 'must be at most 512 characters';
const ARRAY_MESSAGE = 'must have at most 32 items';
const KEYS_MESSAGE = 'must have at most 32 keys';
const ROOT_MESSAGE = 'must be a flat object of evidence fields';

const EvidenceStringSchema = z.string().max(EvidenceLimits.stringLength, { error: STRING_MESSAGE });
const scalarOptions = [EvidenceStringSchema, z.number(), z.boolean(), z.null()] as const;
const EvidenceScalarSchema = z.union(scalarOptions, { error: ITEM_MESSAGE });

/**
 * Evidence and metadata of a durable recovery operation: a flat object of opaque references
 * (`s3://bucket/key`, a provider's request id), digests (`sha256:…`), counts and provider result codes
 * (`HTTP_409`). docs/design.md §8: they are stored for ever in a hash chain and shown to operators, so they must never
 * hold credentials or resolved secrets.
 *
 * Shape (bounds in {@link EvidenceLimits}): at most 32 keys, each matching `/^[a-zA-Z][a-zA-Z0-9_.-]{0,63}$/`;
 * each value is a string of at most 512 characters, a finite number, a boolean, `null`, or an array of at most
 * 32 such scalars. No nested objects, no `undefined`. The schema checks the shape only; {@link parseEvidence}
 * also refuses secret-looking content — use it, not this schema alone, before anything is written.
 */
export const EvidenceSchema = z
  .record(
    z.string().regex(KEY_PATTERN, { error: KEY_MESSAGE }),
    z.union([...scalarOptions, z.array(EvidenceScalarSchema).max(EvidenceLimits.arrayItems, { error: ARRAY_MESSAGE })], {
      error: VALUE_MESSAGE,
    }),
    { error: ROOT_MESSAGE },
  )
  .refine((evidence) => Object.keys(evidence).length <= EvidenceLimits.keys, {
    error: KEYS_MESSAGE,
    // Report too many keys even when some values are also invalid.
    when: (payload) => typeof payload.value === 'object' && payload.value !== null,
  });

/** A validated evidence (or metadata) object; see {@link EvidenceSchema} for what it may hold. */
export type Evidence = z.infer<typeof EvidenceSchema>;

/**
 * How a key appears in an error path: its name when that is a valid key and not itself secret-looking,
 * otherwise `<key N>` (its zero-based position), so an error never echoes a key that may be a credential.
 */
function keyLabel(key: PropertyKey, input: unknown): string {
  if (typeof key === 'string' && KEY_PATTERN.test(key) && detectSecret(key) === undefined) return key;
  const position = typeof key === 'string' && typeof input === 'object' && input !== null ? Object.keys(input).indexOf(key) : -1;
  return position >= 0 ? `<key ${position}>` : '<key>';
}

/** Our own message for each issue, so no zod default (some name the received value) reaches an error. */
function issueMessage(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_key') return KEY_MESSAGE;
  if (issue.code === 'too_big') return issue.origin === 'array' ? ARRAY_MESSAGE : STRING_MESSAGE;
  if (issue.path.length === 0) return issue.code === 'custom' ? KEYS_MESSAGE : ROOT_MESSAGE;
  return issue.path.length === 1 ? VALUE_MESSAGE : ITEM_MESSAGE;
}

/**
 * zod reports a value that fits no branch of a union as one `invalid_union` at the value. When exactly one
 * branch accepted the value's type (an array holding a nested object, an array that is too long), that
 * branch's issues say more, at a more precise path: use them instead.
 */
function flattenUnion(issue: z.core.$ZodIssue): z.core.$ZodIssue[] {
  if (issue.code !== 'invalid_union') return [issue];
  const matching = issue.errors.filter((branch) => !branch.every((inner) => inner.code === 'invalid_type' && inner.path.length === 0));
  const [branch] = matching;
  if (matching.length !== 1 || branch === undefined) return [issue];
  return branch.flatMap((inner) => flattenUnion({ ...inner, path: [...issue.path, ...inner.path] }));
}

function toValidationIssue(issue: z.core.$ZodIssue, input: unknown, where: string): ValidationIssue {
  const [key, ...rest] = issue.path;
  const path = key === undefined ? where : [where, keyLabel(key, input), ...rest.map(String)].join('.');
  return { path, message: issueMessage(issue) };
}

/**
 * Validates evidence or metadata before it is written to a recovery operation or checkpoint: checks the
 * shape with {@link EvidenceSchema}, then refuses anything that looks like a credential (docs/design.md §8: evidence
 * holds opaque references, digests, counts and result codes — never credentials or resolved secrets).
 *
 * The secret rule (`lib/recovery/secret-detector.ts` and the modules it uses) normalises before it judges: every
 * key and string is matched after removing invisible characters (zero-width, soft hyphen, bidi controls), NFKC
 * (full-width `＝` is `=`) and folding Cyrillic/Greek look-alikes to Latin. Refused, in keys, string values, array items
 * and the items of an array joined (a key split across items):
 * - token shapes: PEM armour (`-----BEGIN`/`-----END`) and PEM bodies without it (base64 of a DER key, OpenSSH keys),
 *   JWTs (`eyJ…`, or any three base64url segments whose first decodes to a JSON object with `alg`), URLs with
 *   `user:password@`, `Bearer <token>`, `Basic <base64 user:password>`, AWS access key ids (`AKIA`/`ASIA`/`ABIA`/
 *   `ACCA` + 12 or more), GitHub (`gh[pousr]_`, `github_pat_`), Slack (`xox[abprs]-`, `xapp-`), `sk-…`, Stripe
 *   (`sk_live_`, `rk_test_`, `whsec_`, …), GitLab, Google API, npm, Hugging Face, SendGrid and DigitalOcean tokens,
 *   short ones included;
 * - assignments whose name is a secret's (`password=`, `"pass_word": …`, `PASS WORD =`, `api key:`);
 * - long random-looking tokens (32+ base64-alphabet characters, letters and digits, above 4.1 bits of entropy per
 *   character), unless they are a declared reference or digest form: `sha256:<64 hex>` and other algorithm-labelled
 *   digests of the right length, URLs without credentials (`s3://bucket/key`; their query is still scanned), ARNs,
 *   UUIDs, ISO 8601 timestamps, ETags, bare hex and numbers;
 * - anything of the above wrapped in base64, base64url or hex, unwrapped at most twice;
 * - any key whose name says it holds a secret, whatever its value (`isSecretName`: `password`, `passWord`,
 *   `pass_word`, `secret`, `toKen`, `githubToken`, `accessKey`, `privKey`, `signingKey`, `bearer`, `jwt`,
 *   `authorization`, `cookie`, `session`, `credential(s)`, and `auth`/`otp`/`pin`/`mfa` as whole words) — an AWS
 *   secret access key or a password has no recognisable shape, so its name is what gives it away. Model-usage counts
 *   (`promptTokens`, `totalTokenCount`) are allowed; store a digest under a neutral key such as `requestDigest`, not
 *   `tokenSha256`.
 * Percent-encoded text (`password%3D…`, a URL-encoded key) is decoded and rescanned like base64/hex.
 *
 * Known gaps, by design: a random secret written as bare hex passes (it cannot be told from a digest); a base64 digest
 * without its algorithm label is *refused* as a high-entropy token (write `sha256-<base64>`), as are other long random
 * ids (S3 version ids, `x-amz-id-2`, opaque pagination cursors — record a digest of them instead). Not caught: a
 * secret inside a URL's path (webhook URLs such as Slack's — the path is treated as a reference; record a digest of
 * the URL), a secret split across two keys, JSON `\u` escapes or HTML entities inside a string, leet-spelled key
 * names (`passw0rd`), and vendor prefixes shorter than their 8-character minimum (`ghp_abc123`). The detector is a
 * guard against accidents, not against a module that sets out to hide a secret.
 *
 * Errors name only paths (`evidence.providerResponse`, `evidence.ids.2`) and the kind of secret, never the
 * value; a key that itself looks like a credential (or is not a valid key) is shown as `<key N>`.
 *
 * @param value the candidate evidence, typically built by a module from a provider response.
 * @param where the path prefix used in errors, e.g. `evidence` or `metadata`.
 * @returns a fresh copy of the evidence (later changes to `value` do not affect it).
 * @throws {ValidationError} when the shape is wrong (nested object, too many keys, too long a string, …).
 * @throws {SecretInEvidenceError} when a key or value looks like a credential; nothing should be written.
 */
export function parseEvidence(value: unknown, where: string): Evidence {
  const result = EvidenceSchema.safeParse(value);
  if (!result.success) {
    const issues = result.error.issues.flatMap(flattenUnion).slice(0, 20).map((issue) => toValidationIssue(issue, value, where));
    throw new ValidationError(`Invalid ${where}.`, issues);
  }
  const { paths, kinds } = findSecretsInEvidence(result.data, where);
  if (paths.length > 0) throw new SecretInEvidenceError(paths, kinds);
  return result.data;
}
