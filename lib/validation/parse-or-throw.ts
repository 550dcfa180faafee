import type { z } from 'zod';
import { ValidationError } from '../errors.js';

/**
 * Parses `value` with `schema`, turning a failure into a {@link ValidationError} whose issues carry paths
 * prefixed by `where` (e.g. `body`, `query`, `params`). Issue messages never echo the input.
 * @throws {ValidationError}
 */
export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, where: string): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = result.error.issues.slice(0, 20).map((issue) => ({
    path: [where, ...issue.path.map(String)].join('.'),
    // zod names the unknown keys in this message; they are client input, so they are not echoed back.
    message: issue.code === 'unrecognized_keys' ? 'has fields that are not allowed' : issue.message,
  }));
  throw new ValidationError(`Invalid ${where}.`, issues);
}
