import { ValidationError } from '../errors.js';
import type { Store } from '../db/store.js';
import { parseOrThrow } from '../validation/parse-or-throw.js';
import { findRecoveryOperation } from '../recovery/recovery.repository.js';
import { parseObjectRef, RESULT_OBJECTS_MODULE, ResultObjectPlanSchema } from './result-object-ledger.js';

/**
 * The object a result-object ledger operation wrote, read from the recovery plan it committed before acting — the
 * only source compensation trusts (never the caller).
 * @throws {ValidationError} the operation is unknown, belongs to another module, or has an invalid plan.
 */
export async function loadResultObjectPlan(store: Store, operationId: string): Promise<{ objectRef: string; bucket: string; key: string }> {
  const row = await findRecoveryOperation(store, operationId);
  if (!row || row.module !== RESULT_OBJECTS_MODULE) {
    throw new ValidationError(`Recovery operation ${operationId} is not a ${RESULT_OBJECTS_MODULE} operation.`);
  }
  const plan = parseOrThrow(ResultObjectPlanSchema, JSON.parse(row.recovery_plan), 'recoveryPlan');
  return { objectRef: plan.objectRef, ...parseObjectRef(plan.objectRef) };
}
