import { compactName, nameWords } from './secret-normalisation.js';

/**
 * Stems that make a name a secret's name wherever they occur in its compact form (see `compactName`: case,
 * separators, camel case and look-alike letters removed), so `dbPassword`, `githubToken`, `pass_word`, `toKen`,
 * `x-api-key`, `AWS_SECRET_ACCESS_KEY`, `signingKeyPem` and `jwtHeader` are all caught. Deliberately strict:
 * `sessionId`, `secretRef` and `tokenSha256` are refused too — a digest or reference goes under a neutral key such as
 * `requestDigest` or `keyRef`.
 */
const ANYWHERE_STEMS = [
  'password',
  'passwd',
  'passphrase',
  'passcode',
  'pwd',
  'secret',
  'apikey',
  'accesskey',
  'privatekey',
  'privkey',
  'signingkey',
  'bearer',
  'jwt',
  'authorization',
  'cookie',
  'credential',
  'session',
] as const;
const ANYWHERE = new RegExp(ANYWHERE_STEMS.join('|'));

/**
 * `token` anywhere, except as a model-usage count: `promptTokens`, `completion_tokens`, `totalTokenCount`,
 * `prompt_tokens_details`, `tokenUsage`, `maxTokens` (the only `token` names a model run records). Any other
 * continuation (`accessToken`, `tokenSha256`, `tokenizer`) is refused.
 */
const TOKEN = /token(?!(?:s|count|counts|usage|limit)(?:details)?$)/;

/**
 * Short words that name a secret only as a whole word of the name (after splitting on separators, case changes and
 * digits), because as substrings they are everywhere (`pin` in `shipping`, `auth` in `author`, `otp` in
 * `footprint`): `pin`, `otpCode`, `x-auth`, `mfa_code`. A whole name that is just the word is caught in any case
 * (`PiN`).
 */
const WHOLE_WORDS: ReadonlySet<string> = new Set(['auth', 'otp', 'totp', 'hotp', 'pin', 'mfa']);

/**
 * Whether a name (an evidence key, or the name in a `name=value` assignment) says it holds a secret; see
 * {@link ANYWHERE_STEMS}, {@link TOKEN} and {@link WHOLE_WORDS} for the rule and its reasons.
 */
export function isSecretName(name: string): boolean {
  const compact = compactName(name);
  if (ANYWHERE.test(compact) || TOKEN.test(compact) || WHOLE_WORDS.has(compact)) return true;
  return nameWords(name).some((word) => WHOLE_WORDS.has(word));
}

/**
 * Whether the last few words before an `=` or `:` spell a secret's name across a space, as in `PASS WORD=` or
 * `api key:`: a stem that starts in an earlier word and ends in a later one. A stem wholly inside an earlier word
 * (`Bearer error=…`, `my secret project: …`) does not count — only the word right before the sign names the value.
 * @param words up to three words, the last one right before the sign.
 */
export function spellsSecretNameAcross(words: readonly string[]): boolean {
  if (words.length < 2) return false;
  const compacts = words.map(compactName);
  const joined = compacts.join('');
  const lastStart = joined.length - (compacts.at(-1) ?? '').length;
  for (const stem of [...ANYWHERE_STEMS, 'token']) {
    for (let at = joined.indexOf(stem); at >= 0; at = joined.indexOf(stem, at + 1)) {
      if (at < lastStart && at + stem.length > lastStart) return true;
    }
  }
  return false;
}
