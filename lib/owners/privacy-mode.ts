import { z } from 'zod';

/**
 * Where an owner allows their operations to run (docs/design.md §4, §5): `local_only` keeps model work on local routes;
 * `external_allowed` lets an allow-listed task type fall back to an external provider.
 */
export const PrivacyModeSchema = z.enum(['local_only', 'external_allowed']);

/** See {@link PrivacyModeSchema}. */
export type PrivacyMode = z.infer<typeof PrivacyModeSchema>;

/** The stricter of two privacy modes: `local_only` unless both allow external routes (a decision never widens them). */
export function stricterPrivacy(a: PrivacyMode, b: PrivacyMode): PrivacyMode {
  return a === 'external_allowed' && b === 'external_allowed' ? 'external_allowed' : 'local_only';
}
