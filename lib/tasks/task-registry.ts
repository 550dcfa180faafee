import { UnknownTaskTypeError } from '../errors.js';
import { FieldLimits, TASK_TYPE_PATTERN } from '../validation/field-limits.js';
import type { TaskDefinition } from './task-definition.js';

/**
 * The task types this process serves. Admission refuses unknown types (400); a worker claims only registered
 * types (docs/design.md §5).
 */
export class TaskRegistry {
  readonly #tasks = new Map<string, TaskDefinition>();

  /**
   * Adds a task type.
   * @throws {TypeError} for a malformed or duplicate type, or out-of-range priority/attempts/timeout, per-operation
   * priority bounds (`operationPriority`) or delay bound (`delay.maxSeconds`).
   */
  register(definition: TaskDefinition): this {
    if (!TASK_TYPE_PATTERN.test(definition.type)) throw new TypeError(`Invalid task type "${definition.type}"`);
    if (this.#tasks.has(definition.type)) throw new TypeError(`Task type "${definition.type}" is already registered`);
    const priority = definition.priority ?? 0;
    if (!Number.isInteger(priority) || priority < -1000 || priority > 1000) throw new TypeError('priority must be an integer in -1000..1000');
    if (definition.maxAttempts !== undefined && !(definition.maxAttempts >= 1 && definition.maxAttempts <= 100))
      throw new TypeError('maxAttempts must be in 1..100');
    if (!(definition.timeoutMs >= 1 && definition.timeoutMs <= 15 * 60_000)) throw new TypeError('timeoutMs must be in 1..900000');
    const bounds = definition.operationPriority;
    if (bounds && !(isIntegerIn(bounds.min, FieldLimits.priority) && isIntegerIn(bounds.max, FieldLimits.priority) && bounds.min <= bounds.max))
      throw new TypeError(`operationPriority must be integers min <= max in ${FieldLimits.priority.min}..${FieldLimits.priority.max}`);
    if (definition.delay && !isIntegerIn(definition.delay.maxSeconds, { min: 1, max: FieldLimits.delaySeconds.max }))
      throw new TypeError(`delay.maxSeconds must be an integer in 1..${FieldLimits.delaySeconds.max}`);
    this.#tasks.set(definition.type, definition);
    return this;
  }

  /**
   * The definition of `type`.
   * @throws {UnknownTaskTypeError} when it is not registered.
   */
  get(type: string): TaskDefinition {
    const task = this.#tasks.get(type);
    if (!task) throw new UnknownTaskTypeError(type);
    return task;
  }

  /** Every registered type. */
  types(): string[] {
    return [...this.#tasks.keys()];
  }
}

function isIntegerIn(value: number, range: { readonly min: number; readonly max: number }): boolean {
  return Number.isInteger(value) && value >= range.min && value <= range.max;
}
