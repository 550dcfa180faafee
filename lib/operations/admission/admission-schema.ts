import { z } from 'zod';
import { FieldLimits, IDEMPOTENCY_KEY_PATTERN, TASK_TYPE_PATTERN } from '../../validation/field-limits.js';

/** An `Idempotency-Key`: 1–128 characters of `[A-Za-z0-9._:-]` (docs/design.md §7). */
export const IdempotencyKeySchema = z.string().regex(IDEMPOTENCY_KEY_PATTERN, 'must be 1–128 characters of A-Z a-z 0-9 . _ : -');

/**
 * The body of `POST /api/operations` and the input of `admitOperation` (docs/design.md §4, §7). `params` is checked
 * again, strictly, against the task type's own schema.
 */
export const AdmitRequestSchema = z
  .object({
    taskType: z.string().regex(TASK_TYPE_PATTERN, 'must be a registered task type such as demo.wait'),
    subject: z
      .object({
        type: z.string().min(1).max(FieldLimits.subjectType).regex(/^[A-Za-z0-9._:-]+$/, 'must be [A-Za-z0-9._:-]'),
        id: z.string().min(1).max(FieldLimits.subjectId).regex(/^[A-Za-z0-9._:-]+$/, 'must be [A-Za-z0-9._:-]'),
      })
      .strict(),
    params: z.record(z.string(), z.unknown()).optional(),
  })
  .strict()
  .meta({ id: 'AdmitRequest' });

/** See {@link AdmitRequestSchema}. */
export type AdmitRequest = z.infer<typeof AdmitRequestSchema>;
