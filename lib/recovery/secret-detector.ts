/**
 * The evidence secret detector (docs/design.md §8 "Evidence hygiene"): evidence is stored for ever in a hash chain and
 * printed by `recovery show`, so anything credential-looking is refused before it is written. It normalises before
 * it judges — invisible characters removed, NFKC, look-alike letters folded (`secret-normalisation.ts`); names
 * compared without case or separators (`secret-names.ts`) — then matches token shapes, assignments, PEM bodies, JWTs
 * by structure and long high-entropy tokens that are not a declared digest or reference form (`secret-patterns.ts`),
 * unwraps base64/hex and rescans, and joins array items. `parseEvidence` (evidence.ts) is the one entry point
 * recording calls; its TSDoc states the full rule: what is refused, what passes, and the known gaps.
 */
import { isSecretName } from './secret-names.js';
import { normaliseForScan } from './secret-normalisation.js';
import { hasHighEntropyToken, matchSecret, type SecretKind } from './secret-patterns.js';

export type { SecretKind } from './secret-patterns.js';

/**
 * Bounds of the decode-and-rescan step. Evidence itself is bounded by `EvidenceLimits` (flat, 32 keys, strings of 512
 * characters, arrays of 32 items), so one scan reads at most 16 KiB of joined array text.
 */
const DecodeLimits = Object.freeze({
  /** Wrapped content is unwrapped at most this many times (base64 of hex of a secret: 2). */
  depth: 2,
  /** At most this many candidate runs are decoded per text and level. */
  candidates: 32,
  /** A decoded text must hold at least this many characters to be rescanned. */
  minDecodedLength: 6,
  /** Share of a decoded text's characters that must be printable for it to count as text. */
  printableShare: 0.9,
});

/** Runs that may be base64, base64url or hex; 12 characters decode to 9 bytes (`cGFzc3dvcmQ9` is `password=`). */
const ENCODED_RUN = /[A-Za-z0-9+/_-]{12,}={0,2}/g;
const HEX = /^(?:[0-9a-fA-F]{2})+$/;

/** The text `encoded` stands for, when it decodes as hex, base64 or base64url into mostly printable UTF-8. */
function decodedText(encoded: string): string | undefined {
  const bytes = HEX.test(encoded) ? Buffer.from(encoded, 'hex') : Buffer.from(encoded, 'base64');
  const text = bytes.toString('utf8');
  if (text.length < DecodeLimits.minDecodedLength || text.includes('\uFFFD')) return undefined;
  const printable = [...text].filter((char) => char >= ' ' || char === '\t' || char === '\n' || char === '\r').length;
  return printable >= text.length * DecodeLimits.printableShare ? text : undefined;
}

/** `text` with its percent-encoded octets (RFC 3986 §2.1) decoded, when it has any and they form UTF-8; else undefined. */
function percentDecoded(text: string): string | undefined {
  if (!/%[0-9A-Fa-f]{2}/.test(text)) return undefined;
  try {
    return decodeURIComponent(text.replace(/%(?![0-9A-Fa-f]{2})/g, '%25'));
  } catch {
    return undefined;
  }
}

function scanText(text: string, entropy: boolean, depth: number): SecretKind | undefined {
  const normalised = normaliseForScan(text);
  const kind = matchSecret(normalised);
  if (kind !== undefined) return kind;
  if (depth < DecodeLimits.depth) {
    // `password%3Dhunter2`, a URL-encoded access key, a SAS `sig=…%2B…%3D`: rescanned as the text they encode.
    const unescaped = percentDecoded(normalised);
    const inUnescaped = unescaped === undefined ? undefined : scanText(unescaped, entropy, depth + 1);
    if (inUnescaped !== undefined) return inUnescaped;
    const whole = normalised.replace(/\s+/g, '');
    const runs = [whole, ...[...normalised.matchAll(ENCODED_RUN)].map(([run]) => run)].slice(0, DecodeLimits.candidates + 1);
    for (const run of new Set(runs)) {
      const decoded = /^[A-Za-z0-9+/_-]{12,}={0,2}$/.test(run) ? decodedText(run) : undefined;
      const inner = decoded === undefined ? undefined : scanText(decoded, true, depth + 1);
      if (inner !== undefined) return inner;
    }
  }
  // Last, so that a wrapped secret is reported as what it wraps rather than as random-looking text.
  return entropy && hasHighEntropyToken(normalised) ? 'high_entropy_token' : undefined;
}

/**
 * The kind of credential `text` looks like it holds, or `undefined`; never returns any part of `text`. The text is
 * normalised first (invisible characters removed, NFKC, Cyrillic/Greek look-alikes folded: `normaliseForScan`), then
 * matched against the token shapes (`matchSecret`), then its percent-decoded form (when it has `%XX` octets) and every
 * run that decodes as hex, base64 or base64url into
 * printable text is rescanned, at most {@link DecodeLimits.depth} levels deep, and last the long-high-entropy-token
 * rule (`hasHighEntropyToken`) is applied.
 */
export function detectSecret(text: string): SecretKind | undefined {
  return scanText(text, true, 0);
}

/**
 * Array items joined, so a secret split across items is seen whole: without a separator (`['ghp_', '…']`,
 * `['AKIA', '…']`; the entropy rule is off there, since neighbouring ids would merge into one long token) and with
 * newlines (a PEM body one line per item).
 */
function detectAcrossItems(items: readonly unknown[]): SecretKind | undefined {
  const parts = items.flatMap((item) => (typeof item === 'string' || typeof item === 'number' ? [String(item)] : []));
  if (parts.length < 2) return undefined;
  return scanText(parts.join(''), false, 0) ?? scanText(parts.join('\n'), true, 0);
}

/** Where evidence looked like it held a secret: `paths[i]` (e.g. `evidence.headers.1`) held kind `kinds[i]`. */
export interface SecretFindings {
  readonly paths: string[];
  readonly kinds: SecretKind[];
}

/**
 * Scans shape-checked evidence (a flat object, see `EvidenceSchema`) for anything secret-looking: each key (reported
 * as `<where>.<key N>`, never by name), each string value and array item (`<where>.<key>`, `<where>.<key>.<i>`), the
 * items of each array joined (`<where>.<key>`), and finally each key's name (`secret_key_name`) — a secret with no
 * recognisable shape (an AWS secret access key, a password) is given away only by its name.
 */
export function findSecretsInEvidence(evidence: Readonly<Record<string, unknown>>, where: string): SecretFindings {
  const paths: string[] = [];
  const kinds: SecretKind[] = [];
  Object.entries(evidence).forEach(([key, item], position) => {
    const keyKind = detectSecret(key);
    if (keyKind !== undefined) {
      paths.push(`${where}.<key ${position}>`);
      kinds.push(keyKind);
      return;
    }
    const strings = Array.isArray(item) ? item.map((element, index) => [`${where}.${key}.${index}`, element] as const) : [[`${where}.${key}`, item] as const];
    let valueFound = false;
    for (const [path, element] of strings) {
      const kind = typeof element === 'string' ? detectSecret(element) : undefined;
      if (kind === undefined) continue;
      paths.push(path);
      kinds.push(kind);
      valueFound = true;
    }
    const joinedKind = !valueFound && Array.isArray(item) ? detectAcrossItems(item) : undefined;
    if (joinedKind !== undefined) {
      paths.push(`${where}.${key}`);
      kinds.push(joinedKind);
    } else if (!valueFound && isSecretName(key)) {
      paths.push(`${where}.${key}`);
      kinds.push('secret_key_name');
    }
  });
  return { paths, kinds };
}
