import { z } from 'zod';

/**
 * Where an owner allows their operations to run (DESIGN §4, §5): `local_only` keeps model work on local routes;
 * `external_allowed` lets an allow-listed task type fall back to an external provider.
 */
export const PrivacyModeSchema = z.enum(['local_only', 'external_allowed']);

/** See {@link PrivacyModeSchema}. */
export type PrivacyMode = z.infer<typeof PrivacyModeSchema>;
