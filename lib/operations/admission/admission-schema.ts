import { z } from 'zod';
import { FieldLimits, IDEMPOTENCY_KEY_PATTERN, TASK_TYPE_PATTERN } from '../../validation/field-limits.js';

/** An `Idempotency-Key`: 1–128 characters of `[A-Za-z0-9._:-]` (docs/design.md §7). */
export const IdempotencyKeySchema = z.string().regex(IDEMPOTENCY_KEY_PATTERN, 'must be 1–128 characters of A-Z a-z 0-9 . _ : -');

/**
 * The body of `POST /api/operations` and the input of `admitOperation` (docs/design.md §4, §7). `params` is checked
 * again, strictly, against the task type's own schema. `priority`, `delaySeconds` and `runAt` are accepted only for a
 * task type that opts in (`operationPriority`, `delay`; else a 400 naming the field), within its bounds, and
 * `delaySeconds` and `runAt` never together (`admitOperation` checks all three against the task type).
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
    priority: z
      .number()
      .int()
      .min(FieldLimits.priority.min)
      .max(FieldLimits.priority.max)
      .optional()
      .meta({
        description:
          'Orders this owner’s own queue of the task type: the higher first, then the oldest. It never takes another owner’s turn ' +
          'or another task type’s place. Only for a task type that allows it, within the bounds it sets (else 400); without it, 0 ' +
          'clamped into those bounds.',
      }),
    delaySeconds: z
      .number()
      .int()
      .min(FieldLimits.delaySeconds.min)
      .max(FieldLimits.delaySeconds.max)
      .optional()
      .meta({
        description:
          'Start no earlier than this many seconds from now (the database clock). The operation is `queued` with `nextAttemptAt` ' +
          'until then, can be cancelled, and holds the owner’s capacity; its queued deadline counts from then. Only for a task ' +
          'type that allows it, up to the maximum it sets (at most 30 days; else 400). Not together with `runAt`.',
      }),
    runAt: z.iso
      .datetime({ offset: true })
      .optional()
      .meta({
        description:
          'Start no earlier than this RFC 3339 time (with `Z` or an offset `±hh:mm`; upper-case `T` and `Z`; seconds 00–59, no leap second; ' +
          'read to the millisecond, sub-millisecond digits round up). ' +
          'A time already past means now. Only for a task type that allows a delay, at most its maximum ahead of the database clock’s ' +
          'now (else 400); otherwise as `delaySeconds`, and not together with it.',
      }),
  })
  .strict()
  .meta({ id: 'AdmitRequest' });

/** See {@link AdmitRequestSchema}. */
export type AdmitRequest = z.infer<typeof AdmitRequestSchema>;
