import { expect } from 'vitest';
import { ModelCallError, type ModelFailure } from '../../lib/models/model-errors.js';

/** Awaits `call`, which must reject with a {@link ModelCallError}, and returns that error. */
export async function modelFailure(call: Promise<unknown>): Promise<ModelCallError> {
  const error = await call.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ModelCallError);
  return error as ModelCallError;
}

/** Asserts the bounded failure code, whether it is retryable, and the error's stable code. */
export function expectModelFailure(error: ModelCallError, failure: ModelFailure, retryable: boolean): void {
  expect(error.failure).toBe(failure);
  expect(error.retryable).toBe(retryable);
  expect(error.code).toBe('model_call_failed');
}
