import { ScopeViolationError, ValidationError } from '../errors.js';
import type { Store } from '../db/store.js';
import { OwnerUserIdSchema } from '../owners/owner-user-id.js';

/**
 * The owner scope (docs/design.md §3): every query it issues filters by `owner_user_id`. Built from an authenticated
 * user (API) or from a claimed lease's owner id (worker, via `enterOwnerScope`). Owner reads, cancel and retry,
 * and — with the lease token — heartbeat, progress, complete, fail and acknowledge-cancel take this type.
 *
 * The `#scope` brand makes the class nominal: a {@link WorkerScope} is not assignable to it, and the services'
 * runtime check (`assertOwnerScope`) refuses anything that was not built by this constructor.
 */
export class OwnerScope {
  readonly #scope = 'owner' as const;
  /**
   * @throws {ValidationError} when `ownerUserId` breaks the owner-id rule (`OwnerUserIdSchema`: empty, a lone
   * surrogate, or more than 128 characters counted as code points).
   */
  constructor(
    readonly store: Store,
    readonly ownerUserId: string,
  ) {
    if (!OwnerUserIdSchema.safeParse(ownerUserId).success) {
      throw new ValidationError('The owner id must be 1–128 characters of well-formed Unicode text.');
    }
  }

  /** True when `value` was built by this class (brand check, not duck typing). */
  static is(value: unknown): value is OwnerScope {
    return typeof value === 'object' && value !== null && #scope in value;
  }
}

/**
 * The neutral worker scope (docs/design.md §3): it may only claim. Everything after a claim happens in the owner
 * scope the claim names.
 */
export class WorkerScope {
  readonly #scope = 'worker' as const;
  constructor(readonly store: Store) {}

  /** True when `value` was built by this class. */
  static is(value: unknown): value is WorkerScope {
    return typeof value === 'object' && value !== null && #scope in value;
  }
}

/**
 * Runtime backstop for the owner-scope type.
 * @throws {ScopeViolationError} when `scope` is not an {@link OwnerScope} (e.g. a worker scope cast past the types).
 */
export function assertOwnerScope(scope: unknown): asserts scope is OwnerScope {
  if (!OwnerScope.is(scope)) throw new ScopeViolationError('This call needs an owner scope; the neutral worker scope may only claim.');
}

/**
 * Runtime backstop for the worker-scope type.
 * @throws {ScopeViolationError} when `scope` is not a {@link WorkerScope} (e.g. claiming from an owner/HTTP scope).
 */
export function assertWorkerScope(scope: unknown): asserts scope is WorkerScope {
  if (!WorkerScope.is(scope)) throw new ScopeViolationError('Claims are made from the neutral worker scope only, never from an owner scope.');
}

/**
 * Runtime backstop for a write under a lease: the owner scope must be the one the lease's claim named.
 * @throws {ScopeViolationError} from a non-owner scope, or when the lease belongs to another owner.
 */
export function assertLeaseInScope(scope: unknown, lease: { readonly ownerUserId: string }): asserts scope is OwnerScope {
  assertOwnerScope(scope);
  if (lease.ownerUserId !== scope.ownerUserId) throw new ScopeViolationError('The lease belongs to another owner scope.');
}
