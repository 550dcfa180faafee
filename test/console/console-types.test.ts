import { describe, expect, it } from 'vitest';
import type * as Console from '../../console/src/api/types.js';
import type { CapacityView } from '../../lib/capacity/capacity-view.js';
import type { OperatorOperationPageDto } from '../../lib/http/page-dto.js';
import type { TimelineEvent } from '../../lib/operations/operator/operation-timeline.js';
import type { NotificationView, OperatorOperationDetail } from '../../lib/operations/operator/operator-operation-detail.js';
import type { OperatorOperationView } from '../../lib/operations/operator/operator-operations.js';
import type { ThroughputDto } from '../../lib/operations/operator/throughput.js';
import type { RedriveResult } from '../../lib/queue/redrive-as-operator.js';
import type { ResolvedRecoveryDto } from '../../lib/recovery/resolve-unknown-as-operator.js';
import type { UnresolvedRecoveryDto } from '../../lib/recovery/unresolved.js';
import type { SweeperRunDto } from '../../lib/sweeper/sweeper-runs.js';

/** `true` when every value of `From` is a value of `To`; `false` turns the `checks` tuple below into a type error. */
type Assignable<From, To> = [From] extends [To] ? true : false;

/**
 * The console declares the fields it reads (console/src/api/types.ts) because the server modules holding the zod
 * schemas also hold database code. `npm test` typechecks this file first: if a server DTO (a `z.infer` type) stops
 * fitting what the console reads — a renamed field, a changed type — the typecheck fails here.
 */
const checks: [
  Assignable<OperatorOperationView, Console.OperatorOperation>,
  Assignable<OperatorOperationPageDto, Console.OperationPage>,
  Assignable<OperatorOperationDetail, Console.OperationDetail>,
  Assignable<TimelineEvent, Console.TimelineEvent>,
  Assignable<NotificationView, Console.NotificationView>,
  Assignable<CapacityView, Console.CapacityReport>,
  Assignable<UnresolvedRecoveryDto, Console.RecoveryItem>,
  Assignable<SweeperRunDto, Console.SweepRun>,
  Assignable<ThroughputDto, Console.ThroughputReport>,
  Assignable<RedriveResult, Console.RedriveResult>,
  Assignable<ResolvedRecoveryDto, Console.ResolvedRecovery>,
  Assignable<OperatorOperationView['status'], Console.OperationStatus>,
  Assignable<Console.OperationStatus, OperatorOperationView['status']>,
] = [true, true, true, true, true, true, true, true, true, true, true, true, true];

describe('console DTO types', () => {
  it('every server DTO the console reads fits the console\'s declared type (checked by the typecheck)', () => {
    expect(checks.every(Boolean)).toBe(true);
  });
});
