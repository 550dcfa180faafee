/**
 * Upper bounds of the stored strings of jobs and AI workspace notes, in **characters** as both databases count them:
 * Unicode code points (MariaDB `CHAR_LENGTH` and `varchar(n)` over utf8mb4, SQLite `length()`), not UTF-16 code units
 * as JavaScript's `String.length` counts them — an emoji is one character here and two units there. The migrations
 * declare the same bounds in DDL; `test/jobs/jobs-schema-bounds.test.ts` proves the two agree on both databases.
 */
export const JobLimits = Object.freeze({
  title: 200,
  company: 200,
  description: 20_000,
  noteKind: 64,
  /** JSON text of a workspace note. */
  noteContentJson: 16_000,
});

/** A lone (unpaired) UTF-16 surrogate: not a character, and not storable in utf8mb4 or UTF-8. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Characters in `text` as the databases count them: Unicode code points, so a surrogate pair (an emoji, a rare CJK
 * ideograph) counts once. A lone surrogate counts once too (refuse those with {@link isWellFormedText}).
 */
export function charCount(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}

/**
 * True when `text` is well-formed Unicode: no lone surrogate (which `JSON.parse` accepts from `"\ud800"`). A lone
 * surrogate cannot be stored intact — both drivers encode it to UTF-8 as U+FFFD, so the text read back would differ
 * from the text accepted — so it is refused at the edge instead (ES2024's `String.prototype.isWellFormed`, which our
 * ES2023 target lacks).
 */
export function isWellFormedText(text: string): boolean {
  return !LONE_SURROGATE.test(text);
}

/** One control or format character (`\p{Cc}`, `\p{Cf}`: NUL, ESC, CR/LF, bidi overrides, zero-width characters, BOM). */
const CONTROL_OR_FORMAT_CHAR = /[\p{Cc}\p{Cf}]/u;

/**
 * True when `text` holds a control or format character: refused in what a terminal or the console prints as a label
 * (owner ids, actors), where it would print as a terminal escape or a forged row, or make two labels look alike.
 */
export function hasControlOrFormat(text: string): boolean {
  return CONTROL_OR_FORMAT_CHAR.test(text);
}
