import { z } from 'zod';
import { NotificationDtoSchema, OperationDtoSchema } from '../operations/owner/operation-dto.js';
import { OperatorOperationViewSchema } from '../operations/operator/operator-operations.js';
import { UnresolvedRecoveryDtoSchema } from '../recovery/unresolved.js';

/** Body of `GET /api/operations` (docs/design.md §7): at most 100 operation DTOs, newest first, and the opaque next cursor. */
export const OperationPageDtoSchema = z.strictObject({
  items: z.array(OperationDtoSchema).max(100),
  nextCursor: z.string().nullable(),
}).meta({ id: 'OperationPageDto' });

/** See {@link OperationPageDtoSchema}. */
export type OperationPageDto = z.infer<typeof OperationPageDtoSchema>;

/** Body of `GET /api/notifications` (docs/design.md §7): at most 100 notification DTOs, newest first, and the next cursor. */
export const NotificationPageDtoSchema = z.strictObject({
  items: z.array(NotificationDtoSchema).max(100),
  nextCursor: z.string().nullable(),
}).meta({ id: 'NotificationPageDto' });

/** See {@link NotificationPageDtoSchema}. */
export type NotificationPageDto = z.infer<typeof NotificationPageDtoSchema>;

/**
 * Body of `GET /api/ops/recovery` (docs/design.md §8 "Ops surface"): at most 100 unresolved recovery operations, oldest first.
 * No cursor: the list is a work queue for operators, narrowed with `state`.
 */
export const UnresolvedRecoveryPageDtoSchema = z.strictObject({
  items: z.array(UnresolvedRecoveryDtoSchema).max(100),
}).meta({ id: 'UnresolvedRecoveryPageDto' });

/** See {@link UnresolvedRecoveryPageDtoSchema}. */
export type UnresolvedRecoveryPageDto = z.infer<typeof UnresolvedRecoveryPageDtoSchema>;

/**
 * Body of `GET /api/ops/operations` (operators only): at most 100 operator views of every owner's operations,
 * newest first, and the opaque next cursor.
 */
export const OperatorOperationPageDtoSchema = z.strictObject({
  items: z.array(OperatorOperationViewSchema).max(100),
  nextCursor: z.string().nullable(),
}).meta({ id: 'OperatorOperationPageDto' });

/** See {@link OperatorOperationPageDtoSchema}. */
export type OperatorOperationPageDto = z.infer<typeof OperatorOperationPageDtoSchema>;
