import { ValidationError } from '../../errors.js';
import type { TaskDefinition } from '../../tasks/task-definition.js';

/**
 * The per-operation priority of an admission (docs/design.md §4, fair share: order): the value stored in
 * `operations.priority`, which orders one owner's own queue of the task type — the higher first, then the oldest
 * `available_at` (`operations_owner_claim_idx`). The claim reads that order only inside one (task type, owner) turn, so
 * a priority never takes another owner's turn, nor another task type's tier (`TaskDefinition.priority`).
 *
 * - The task type opts in (`operationPriority: { min, max }`): the request's `priority`, which must lie in `min..max`;
 *   without one, 0 clamped into `min..max`.
 * - It does not: a request `priority` is refused; the row stores the task type's tier, as before the per-operation
 *   priority existed (constant within the type, so it orders nothing, and rows read the same by an earlier release).
 *
 * An owner retry keeps the row's priority.
 * @param requested the request's `priority`, already an integer in `FieldLimits.priority` (`AdmitRequestSchema`).
 * @throws {ValidationError} (HTTP 400, path `body.priority`) when the task type accepts no priority, or it is outside
 * the task type's bounds.
 */
export function operationPriorityOf(task: TaskDefinition, requested: number | undefined): number {
  const bounds = task.operationPriority;
  if (!bounds) {
    if (requested !== undefined) throw new ValidationError('Invalid body.', [{ path: 'body.priority', message: `is not accepted for ${task.type}` }]);
    return task.priority ?? 0;
  }
  if (requested === undefined) return Math.min(bounds.max, Math.max(bounds.min, 0));
  if (requested < bounds.min || requested > bounds.max) {
    throw new ValidationError('Invalid body.', [{ path: 'body.priority', message: `must be an integer in ${bounds.min}..${bounds.max} for ${task.type}` }]);
  }
  return requested;
}
