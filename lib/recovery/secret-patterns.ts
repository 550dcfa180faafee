import { isSecretName, spellsSecretNameAcross } from './secret-names.js';

/**
 * The kind of credential the evidence secret detector recognised. Reported in `SecretInEvidenceError.kinds` instead of
 * the value itself.
 */
export type SecretKind =
  | 'pem_block'
  | 'pem_body'
  | 'jwt'
  | 'url_credentials'
  | 'bearer_token'
  | 'basic_credentials'
  | 'aws_access_key_id'
  | 'github_token'
  | 'slack_token'
  | 'openai_api_key'
  | 'stripe_secret_key'
  | 'vendor_token'
  | 'credential_assignment'
  | 'high_entropy_token'
  | 'secret_key_name';

/** Token shapes, most specific first; the first match names the kind. All are linear in the text's length. */
const TOKEN_PATTERNS: readonly (readonly [SecretKind, RegExp])[] = [
  // Any PEM armour line, BEGIN or END: private keys, but also certificates — to be safe, none belongs in evidence.
  ['pem_block', /-----\s*(?:BEGIN|END)\b/i],
  // header.payload.signature whose header is JSON, so base64url `eyJ` (`{"`); other headers are decoded below.
  ['jwt', /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/],
  // scheme://user:password@host (the user may be empty, as in redis://:password@host).
  ['url_credentials', /(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s/?#@:]*:[^\s/?#@]+@/],
  // RFC 6750 token68 of at least 8 characters; `Bearer realm="…"` challenges do not match.
  ['bearer_token', /\bbearer\s+[A-Za-z0-9\-._~+/]{8,}/i],
  // Access key ids (AKIA long-term, ASIA temporary, ABIA/ACCA service): 16 more characters, shortened ones too.
  ['aws_access_key_id', /(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{12,}/],
  ['github_token', /(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{8,}|github_pat_[A-Za-z0-9_]{8,})/],
  ['slack_token', /(?<![A-Za-z0-9])(?:xox[abprs]-[A-Za-z0-9]|xapp-\d-)/],
  // sk-… (OpenAI, Anthropic `sk-ant-`): 8+ characters with a digit, or 20+ (`sk-learn` alone is a word).
  ['openai_api_key', /(?<![A-Za-z0-9_-])sk-(?:(?=[A-Za-z_-]{0,40}\d)[A-Za-z0-9_-]{8,}|[A-Za-z0-9_-]{20,})/],
  // Test-mode keys are credentials too; whsec_ signs webhooks.
  ['stripe_secret_key', /(?<![A-Za-z0-9])(?:[sr]k_(?:live|test)_|whsec_)[A-Za-z0-9]{8,}/],
  // GitLab, Google API, npm, Hugging Face, SendGrid, DigitalOcean.
  ['vendor_token', /(?<![A-Za-z0-9_-])(?:glpat-[A-Za-z0-9_-]{8,}|AIza[0-9A-Za-z_-]{20,}|npm_[A-Za-z0-9]{20,}|hf_[A-Za-z]{20,}|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}|do[opr]_v1_[a-f0-9]{16,})/],
];

/** Three dot-separated base64url segments: a JWS (a JWE has five, its first three match too). */
const DOTTED_SEGMENTS = /(?<![A-Za-z0-9_=-])([A-Za-z0-9_-]{4,}={0,2})\.([A-Za-z0-9_-]{4,}={0,2})\.[A-Za-z0-9_=-]*/g;
const BASIC_CREDENTIALS = /\bbasic\s+([A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])/gi;
/** An identifier followed by `=` or `:` (optionally quoted, as in JSON): `password=…`, `"api_key": …`. */
const ASSIGNMENT = /(?<![A-Za-z0-9_.-])([A-Za-z][A-Za-z0-9_.-]*)["']?\s*([=:])/g;
/** Up to two words right before an assignment's name, for `PASS WORD=`. */
const WORDS_BEFORE = /(?:^|[^A-Za-z0-9_.-])((?:[A-Za-z][A-Za-z0-9_.-]*[ \t]+){1,2})$/;
/** Base64 text of at least 64 characters, possibly in lines (a PEM body without its armour). */
const BASE64_BODY = /(?:[A-Za-z0-9+/]{16,}={0,2}[ \t\r\n]*){2,}|[A-Za-z0-9+/]{64,}={0,2}/g;

/** Lengths of each algorithm's digest in hex, then base64 (padded or not), for {@link LABELLED_DIGEST}. */
const DIGEST_LENGTHS: Readonly<Record<string, readonly number[]>> = Object.freeze({
  md5: [32, 22, 24],
  sha1: [40, 27, 28],
  sha224: [56, 38, 40],
  sha256: [64, 43, 44],
  sha384: [96, 64],
  sha512: [128, 86, 88],
});
/** `<algorithm>:<digest>`, `<algorithm>-<digest>` (SRI, W3C Subresource Integrity) or `<algorithm>=<digest>`. */
const LABELLED_DIGEST = /\b(md5|sha1|sha224|sha256|sha384|sha512)[:=-]([A-Za-z0-9+/_-]+={0,2})/gi;
/**
 * Reference and digest forms that are not secrets however random they look, masked before the entropy rule:
 * algorithm-labelled digests of the right length (`sha256:<64 hex>`, SRI `sha512-<base64>`), URLs up to their query
 * (`s3://bucket/key`, `https://host/path` — credentials in a URL are refused before this), ARNs, UUIDs, ISO 8601
 * timestamps and quoted ETags. Bare hex (an MD5 ETag, a SHA-1) and numeric ids never reach the entropy threshold.
 */
const REFERENCE_FORMS: readonly RegExp[] = [
  /\b[a-z][a-z0-9+.-]*:\/\/[^\s?#"'<>]*/gi,
  /\barn:aws[a-z-]*:[^\s"']*/g,
  /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi,
  /\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?/g,
  /(?:W\/)?"[0-9a-fA-F]{16,}(?:-\d+)?"/g,
];

/**
 * A long random-looking token: at least 32 characters of the base64/base64url alphabet (after an id-style lower-case
 * prefix such as `chatcmpl-`), letters and digits mixed, not hex, with a Shannon entropy above 4.1 bits per character.
 * Random base62/base64 of that length scores 4.0–5.2 (an AWS secret access key, 40 characters, scores at least 4.3);
 * hex cannot exceed 4; English identifiers and paths stay at or below 4.
 */
const LONG_TOKEN = /[A-Za-z0-9+/=_-]{32,}/g;
const ENTROPY_THRESHOLD_BITS = 4.1;

function shannonEntropy(text: string): number {
  const counts = new Map<string, number>();
  for (const char of text) counts.set(char, (counts.get(char) ?? 0) + 1);
  let bits = 0;
  for (const count of counts.values()) bits -= (count / text.length) * Math.log2(count / text.length);
  return bits;
}

function maskReferences(text: string): string {
  let masked = text.replace(LABELLED_DIGEST, (whole, algorithm: string, digest: string) =>
    DIGEST_LENGTHS[algorithm.toLowerCase()]?.includes(digest.length) ? ' ' : whole,
  );
  for (const form of REFERENCE_FORMS) masked = masked.replace(form, ' ');
  return masked;
}

/**
 * Whether already-normalised `text` holds a long random-looking token ({@link LONG_TOKEN}) that is not one of the
 * reference or digest forms ({@link REFERENCE_FORMS}, {@link LABELLED_DIGEST}).
 */
export function hasHighEntropyToken(text: string): boolean {
  for (const [token] of maskReferences(text).matchAll(LONG_TOKEN)) {
    const body = token.replace(/^[a-z]{2,12}[_-]/, '').replace(/=+$/, '');
    if (body.length < 32 || /^[0-9a-fA-F_-]+$/.test(body) || !/[0-9]/.test(body) || !/[A-Za-z]/.test(body)) continue;
    if (shannonEntropy(body) > ENTROPY_THRESHOLD_BITS) return true;
  }
  return false;
}

function decodeBase64(text: string): Buffer {
  return Buffer.from(text.replace(/\s+/g, ''), 'base64');
}

/** A JWT whatever its header's first bytes: the first of three base64url segments decodes to a JSON object with `alg`. */
function hasJwtShape(text: string): boolean {
  for (const match of text.matchAll(DOTTED_SEGMENTS)) {
    try {
      const header: unknown = JSON.parse(decodeBase64(match[1] ?? '').toString('utf8'));
      if (typeof header === 'object' && header !== null && 'alg' in header) return true;
    } catch {
      // Not JSON: an ordinary dotted name.
    }
  }
  return false;
}

/** A PEM body without its armour: base64 that decodes to a DER SEQUENCE, or an OpenSSH key. */
function hasPemBody(text: string): boolean {
  for (const [body] of text.matchAll(BASE64_BODY)) {
    const compact = body.replace(/\s+/g, '');
    if (compact.length < 64) continue;
    if (compact.startsWith('b3BlbnNzaC1rZXktdjE')) return true;
    const der = decodeBase64(compact);
    // A DER SEQUENCE: long-form length (RSA, EC, PKCS#8), or a short form spanning the whole body (Ed25519).
    if (der[0] === 0x30 && (der[1] === 0x81 || der[1] === 0x82 || der[1] === 0x83 || der[1] === der.length - 2)) return true;
  }
  return false;
}

function hasCredentialAssignment(text: string): boolean {
  for (const match of text.matchAll(ASSIGNMENT)) {
    // `arn:aws:secretsmanager:…:secret:name` is a reference to a secret, not the secret: skip `:x:` segments.
    if (match[2] === ':' && text[match.index - 1] === ':') continue;
    const name = match[1] ?? '';
    if (isSecretName(name)) return true;
    if (text[match.index - 1] !== ' ' && text[match.index - 1] !== '\t') continue;
    const before = WORDS_BEFORE.exec(text.slice(Math.max(0, match.index - 160), match.index))?.[1];
    if (before !== undefined && spellsSecretNameAcross([...before.trim().split(/[ \t]+/), name])) return true;
  }
  return false;
}

/**
 * The kind of credential already-normalised `text` shows on its face (no decoding of wrapped content, no entropy
 * rule), or `undefined`; never returns any part of `text`.
 */
export function matchSecret(text: string): SecretKind | undefined {
  for (const [kind, pattern] of TOKEN_PATTERNS) {
    if (pattern.test(text)) return kind;
  }
  if (hasJwtShape(text)) return 'jwt';
  for (const match of text.matchAll(BASIC_CREDENTIALS)) {
    // RFC 7617 credentials are base64("user:password"); "Basic auth" or "Basic realm" decode to no colon.
    if (decodeBase64(match[1] ?? '').toString('latin1').includes(':')) return 'basic_credentials';
  }
  if (hasCredentialAssignment(text)) return 'credential_assignment';
  if (hasPemBody(text)) return 'pem_body';
  return undefined;
}
