import { z } from 'zod';
import { SecretInEvidenceError, ValidationError, type ValidationIssue } from '../errors.js';

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
 * The kind of credential {@link parseEvidence} recognised. Reported in {@link SecretInEvidenceError.kinds}
 * instead of the value itself.
 */
export type SecretKind =
  | 'pem_block'
  | 'jwt'
  | 'url_credentials'
  | 'bearer_token'
  | 'basic_credentials'
  | 'aws_access_key_id'
  | 'github_token'
  | 'slack_token'
  | 'openai_api_key'
  | 'stripe_secret_key'
  | 'credential_assignment'
  | 'secret_key_name';

/** Value detectors, most specific first; the first match names the kind. All are linear on ≤ 512 chars. */
type PatternKind = Exclude<SecretKind, 'basic_credentials' | 'credential_assignment' | 'secret_key_name'>;
const SECRET_PATTERNS: readonly (readonly [PatternKind, RegExp])[] = [
  // Any PEM block: private keys, but also certificates — to be safe, none belongs in evidence.
  ['pem_block', /-----BEGIN/],
  // header.payload.signature, base64url; the header is JSON, so it starts with `eyJ` (`{"`).
  ['jwt', /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/],
  // scheme://user:password@host (the user may be empty, as in redis://:password@host).
  ['url_credentials', /(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s/?#@:]*:[^\s/?#@]+@/],
  // RFC 6750 token68 of at least 8 characters; `Bearer realm="…"` challenges do not match.
  ['bearer_token', /\bbearer\s+[A-Za-z0-9\-._~+/]{8,}/i],
  ['aws_access_key_id', /(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])/],
  ['github_token', /(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})/],
  ['slack_token', /(?<![A-Za-z0-9])(?:xox[abprs]-[A-Za-z0-9]|xapp-\d-)/],
  ['openai_api_key', /(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,}/],
  // Test-mode keys are credentials too.
  ['stripe_secret_key', /(?<![A-Za-z0-9])[sr]k_(?:live|test)_[A-Za-z0-9]{8,}/],
];

const BASIC_CREDENTIALS = /\bbasic\s+([A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])/gi;
/** An identifier followed by `=` or `:` (optionally quoted, as in JSON): `password=…`, `"api_key": …`. */
const ASSIGNMENT = /(?<![A-Za-z0-9_.-])([A-Za-z][A-Za-z0-9_.-]*)["']?\s*([=:])/g;

/** Words (after splitting on `_ . -`, case and digit boundaries) that make a name a secret's name. */
const SECRET_WORDS = new Set([
  'password',
  'passwords',
  'passwd',
  'pwd',
  'passphrase',
  'secret',
  'secrets',
  'token',
  'apikey',
  'privatekey',
  'credential',
  'credentials',
  'authorization',
  'cookie',
  'cookies',
  'session',
]);
/** Adjacent word pairs that name a secret: `api_key`, `apiKey`, `X-Api-Key`, `privateKey`. */
const SECRET_WORD_PAIRS = new Set(['api key', 'api keys', 'private key']);

function nameWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .replace(/([A-Za-z])([0-9])/g, '$1 $2')
    .toLowerCase()
    .split(/[\s_.-]+/)
    .filter((word) => word !== '');
}

/**
 * Whether a name says it holds a secret. Deliberately strict: `tokenSha256`, `sessionId` and `secretRef` are
 * refused too — a digest goes under a neutral key such as `requestDigest`. Plural `tokens` is allowed, so
 * model usage counts (`promptTokens`, `completion_tokens`) can be recorded.
 */
function isSecretName(name: string): boolean {
  const words = nameWords(name);
  return words.some((word, i) => SECRET_WORDS.has(word) || SECRET_WORD_PAIRS.has(`${word} ${words[i + 1] ?? ''}`));
}

/** The kind of credential `text` looks like it contains, or `undefined`. Never returns any part of `text`. */
function detectSecret(text: string): SecretKind | undefined {
  for (const [kind, pattern] of SECRET_PATTERNS) {
    if (pattern.test(text)) return kind;
  }
  for (const match of text.matchAll(BASIC_CREDENTIALS)) {
    // RFC 7617 credentials are base64("user:password"); "Basic auth" or "Basic realm" decode to no colon.
    if (Buffer.from(match[1] ?? '', 'base64').toString('latin1').includes(':')) return 'basic_credentials';
  }
  for (const match of text.matchAll(ASSIGNMENT)) {
    // `arn:aws:secretsmanager:…:secret:name` is a reference to a secret, not the secret: skip `:x:` segments.
    const isSegment = match[2] === ':' && text[match.index - 1] === ':';
    if (!isSegment && isSecretName(match[1] ?? '')) return 'credential_assignment';
  }
  return undefined;
}

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
 * Refused as secrets, in keys, string values and string array items: PEM blocks (any `-----BEGIN`), JWTs,
 * URLs with `user:password@`, `Bearer <token>`, `Basic <base64 user:password>`, AWS access key ids
 * (`AKIA…`/`ASIA…`), GitHub (`ghp_`, `gho_`, `ghs_`, `ghu_`, `ghr_`, `github_pat_`), Slack (`xox[abprs]-`,
 * `xapp-`), OpenAI-style (`sk-…`) and Stripe (`sk_live_`, `rk_live_`, `…_test_`) keys, and assignments such as
 * `password=`, `token:`, `api_key=`, `aws_secret_access_key=`. Also refused: any key whose name says it holds a
 * secret (`password`, `secret`, `token`, `apiKey`, `privateKey`, `credential(s)`, `authorization`, `cookie`,
 * `session`, …) whatever its value — AWS secret access keys have no recognisable shape, so their name is what
 * gives them away. Store a digest under a neutral key such as `requestDigest`, not `tokenSha256`.
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
  const paths: string[] = [];
  const kinds: SecretKind[] = [];
  Object.entries(result.data).forEach(([key, item], position) => {
    const keyKind = detectSecret(key);
    if (keyKind !== undefined) {
      paths.push(`${where}.<key ${position}>`);
      kinds.push(keyKind);
      return;
    }
    const strings = Array.isArray(item)
      ? item.map((element, index) => [`${where}.${key}.${index}`, element] as const)
      : [[`${where}.${key}`, item] as const];
    let valueFound = false;
    for (const [path, element] of strings) {
      const kind = typeof element === 'string' ? detectSecret(element) : undefined;
      if (kind === undefined) continue;
      paths.push(path);
      kinds.push(kind);
      valueFound = true;
    }
    if (!valueFound && isSecretName(key)) {
      paths.push(`${where}.${key}`);
      kinds.push('secret_key_name');
    }
  });
  if (paths.length > 0) throw new SecretInEvidenceError(paths, kinds);
  return result.data;
}
