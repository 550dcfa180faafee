/**
 * Invisible characters removed before evidence is scanned for secrets: soft hyphen (U+00AD), Mongolian vowel separator
 * (U+180E), zero-width space / non-joiner / joiner (U+200B–U+200D), LRM/RLM (U+200E–U+200F), bidi embeddings and
 * isolates (U+202A–U+202E, U+2066–U+2069), word joiner and invisible operators (U+2060–U+2064), BOM (U+FEFF). Each
 * renders as nothing, so `gh\u200Bp_…` looks — and pastes — like `ghp_…`.
 */
const INVISIBLE = /[\u00AD\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/g;

/**
 * Cyrillic and Greek letters that look like the Latin letters of the names and token prefixes the detector knows
 * (Unicode TR39 confusables, restricted to those letters; NFKC leaves them alone because they are distinct letters).
 */
const CONFUSABLES: Readonly<Record<string, string>> = Object.freeze({
  // Cyrillic lower case
  а: 'a', в: 'b', е: 'e', һ: 'h', і: 'i', ј: 'j', к: 'k', м: 'm', н: 'h', о: 'o', р: 'p', с: 'c', т: 't', у: 'y',
  х: 'x', ѕ: 's', ԁ: 'd', ԛ: 'q', ԝ: 'w', ӏ: 'l',
  // Cyrillic upper case
  А: 'A', В: 'B', Е: 'E', З: '3', І: 'I', Ј: 'J', К: 'K', М: 'M', Н: 'H', О: 'O', Р: 'P', С: 'C', Т: 'T', У: 'Y',
  Х: 'X', Ѕ: 'S', Ԁ: 'D', Ԛ: 'Q', Ԝ: 'W', Ӏ: 'I',
  // Greek
  Α: 'A', Β: 'B', Ε: 'E', Ζ: 'Z', Η: 'H', Ι: 'I', Κ: 'K', Μ: 'M', Ν: 'N', Ο: 'O', Ρ: 'P', Τ: 'T', Υ: 'Y', Χ: 'X',
  α: 'a', ι: 'i', κ: 'k', ν: 'v', ο: 'o', ρ: 'p', τ: 't', υ: 'u', χ: 'x',
});
const CONFUSABLE = new RegExp(`[${Object.keys(CONFUSABLES).join('')}]`, 'g');

/**
 * The text the secret detector judges: invisible characters removed, then NFKC (Unicode UAX #15, which folds
 * full-width `＝`, `：`, `－` and letters to ASCII), then Cyrillic/Greek look-alikes folded to Latin. Only for matching:
 * evidence is stored as given.
 */
export function normaliseForScan(text: string): string {
  return text
    .replace(INVISIBLE, '')
    .normalize('NFKC')
    .replace(INVISIBLE, '')
    .replace(CONFUSABLE, (letter) => CONFUSABLES[letter] ?? letter);
}

/**
 * A name reduced to lower-case ASCII letters and digits after {@link normaliseForScan}: `passWord`, `pass_word`,
 * `pass-word`, `PASS WORD` and `раss.wоrd` (Cyrillic) all become `password`. Word boundaries are gone on purpose —
 * camel case and separators are exactly what a bypass plays with.
 */
export function compactName(name: string): string {
  return normaliseForScan(name)
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '');
}

/**
 * A name's words: split on separators (anything but letters and digits), case changes and letter/digit boundaries,
 * lower-cased — `x-auth_header` → `x auth header`, `otpCode` → `otp code`. Used only for the short words that are
 * too common as substrings (`pin` in `shipping`) to be matched anywhere.
 */
export function nameWords(name: string): string[] {
  return normaliseForScan(name)
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .replace(/([A-Za-z])([0-9])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word !== '');
}
