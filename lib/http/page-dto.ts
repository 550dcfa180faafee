import { z } from 'zod';
import { NotificationDtoSchema, OperationDtoSchema } from '../operations/operation-dto.js';

/** Body of `GET /api/operations` (DESIGN §7): at most 100 operation DTOs, newest first, and the opaque next cursor. */
export const OperationPageDtoSchema = z.strictObject({
  items: z.array(OperationDtoSchema).max(100),
  nextCursor: z.string().nullable(),
});

/** See {@link OperationPageDtoSchema}. */
export type OperationPageDto = z.infer<typeof OperationPageDtoSchema>;

/** Body of `GET /api/notifications` (DESIGN §7): at most 100 notification DTOs, newest first, and the next cursor. */
export const NotificationPageDtoSchema = z.strictObject({
  items: z.array(NotificationDtoSchema).max(100),
  nextCursor: z.string().nullable(),
});

/** See {@link NotificationPageDtoSchema}. */
export type NotificationPageDto = z.infer<typeof NotificationPageDtoSchema>;
