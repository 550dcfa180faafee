import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { CONSOLE_API_TYPES_FILE, generateConsoleApiTypes } from '../../console/generate-api-types.js';
import type * as Console from '../../console/src/api/types.js';
import { OPERATION_STATUSES } from '../../console/src/api/types.js';
import type { CapacityView } from '../../lib/capacity/capacity-view.js';
import type { OperatorOperationPageDto } from '../../lib/http/page-dto.js';
import { FAILURE_CODES } from '../../lib/operations/lifecycle/failure-code.js';
import { ALL_STATUSES } from '../../lib/operations/lifecycle/operation-status.js';
import type { OperatorOperationDetail } from '../../lib/operations/operator/operator-operation-detail.js';
import type { OperatorOperationView } from '../../lib/operations/operator/operator-operations.js';
import type { UnresolvedRecoveryDto } from '../../lib/recovery/unresolved.js';

/** `true` when every value of `From` is a value of `To`; `false` turns the `checks` tuple below into a type error. */
type Assignable<From, To> = [From] extends [To] ? true : false;

/**
 * The console's types are generated from the operator document (console/generate-api-types.ts), which is generated from
 * the server's zod schemas. `npm test` typechecks this file after generating them: if the chain loses a field or widens
 * a closed set on the way — a server DTO no longer fitting its generated type, or a generated status the console's
 * runtime list lacks — the typecheck fails here.
 */
const checks: [
  Assignable<OperatorOperationView, Console.OperatorOperation>,
  Assignable<OperatorOperationPageDto, Console.OperationPage>,
  Assignable<OperatorOperationDetail, Console.OperationDetail>,
  Assignable<CapacityView, Console.CapacityReport>,
  Assignable<UnresolvedRecoveryDto['chain'], Console.ChainStatus>,
  Assignable<Console.OperationStatus, (typeof OPERATION_STATUSES)[number]>,
  Assignable<NonNullable<Console.OperatorOperation['failure']>['code'], (typeof FAILURE_CODES)[number]>,
] = [true, true, true, true, true, true, true];

describe('the console’s generated API types', () => {
  it('the generated file is what the operator document generates now (npm run typecheck and build:console write it)', async () => {
    expect(await readFile(CONSOLE_API_TYPES_FILE, 'utf8')).toBe(await generateConsoleApiTypes());
  });

  it('every server DTO the console reads fits its generated type, and closed sets stay closed (checked by the typecheck)', async () => {
    expect(checks.every(Boolean)).toBe(true);
    expect([...OPERATION_STATUSES]).toEqual([...ALL_STATUSES]);
    const generated = await readFile(CONSOLE_API_TYPES_FILE, 'utf8');
    expect(generated).toContain(`FailureCode: ${FAILURE_CODES.map((code) => `"${code}"`).join(' | ')};`);
  });
});
