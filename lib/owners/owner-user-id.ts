import { z } from 'zod';
import { charCount, hasControlOrFormat, isWellFormedText } from '../jobs/job-limits.js';
import { FieldLimits } from '../validation/field-limits.js';

/**
 * The one rule for an owner id — the JWT `sub` (docs/design.md §7), the `owner_user_id` column, every CLI `<sub>` and
 * every owner filter: well-formed Unicode text of 1–128 **characters**, counted as the column counts them (Unicode code
 * points: MariaDB `varchar(128)` over utf8mb4, SQLite `length()`), so an emoji counts once, not as its two UTF-16 units.
 * A lone surrogate (`"\ud800"`, which `JSON.parse` accepts) is refused: both drivers would store it as U+FFFD, so two
 * different subjects would become one owner. Control and format characters (`\p{Cc}`, `\p{Cf}`: NUL, ESC, CR/LF,
 * bidi overrides, zero-width characters, BOM) are refused too: they would print as terminal escapes or forged rows in
 * the CLI's tables, and make two owners that display identically.
 */
export const OwnerUserIdSchema = z
  .string()
  .min(1, 'must not be empty')
  .refine(isWellFormedText, 'must be well-formed Unicode text (no lone surrogate)')
  .refine((id) => !hasControlOrFormat(id), 'must not contain control or format characters')
  .refine((id) => charCount(id) <= FieldLimits.ownerUserId, `must be at most ${FieldLimits.ownerUserId} characters`);
