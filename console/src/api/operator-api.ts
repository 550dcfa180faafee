import type { ApiClient } from './api-client.js';
import { ApiError } from './problem.js';
import type {
  CapacityReport,
  OperationDetail,
  OperationPage,
  OperatorOperation,
  RecoveryPage,
  RedriveResult,
  ResolvedRecovery,
  SweepPage,
  ThroughputReport,
} from './types.js';

/**
 * The operator API (`/api/ops/*`), one function per route. Every route is invisible (404) to a token without
 * `ops:read`; the POST routes also need `ops:write`. Path segments are encoded, so an id cannot change the route.
 */

/** Filters and paging of the operation list; empty values are not sent. */
export interface OperationFilters {
  readonly status?: string;
  readonly taskType?: string;
  readonly ownerUserId?: string;
  readonly cursor?: string;
  readonly limit?: number;
}

/** `GET /api/ops/operations`: every owner's operations, newest first. */
export function listOperations(api: ApiClient, filters: OperationFilters): Promise<OperationPage> {
  return api.get('/api/ops/operations', { ...filters });
}

/** `GET /api/ops/operations/{id}`: one operation with its timeline and notifications. */
export function getOperation(api: ApiClient, id: string): Promise<OperationDetail> {
  return api.get(`/api/ops/operations/${encodeURIComponent(id)}`);
}

/** `POST /api/ops/operations/{id}/cancel`: the owner's cancel, on their behalf. */
export function cancelOperation(api: ApiClient, id: string): Promise<OperatorOperation> {
  return api.post(`/api/ops/operations/${encodeURIComponent(id)}/cancel`);
}

/** `POST /api/ops/operations/{id}/retry`: the owner's retry of a failed or cancelled operation, on their behalf. */
export function retryOperation(api: ApiClient, id: string): Promise<OperatorOperation> {
  return api.post(`/api/ops/operations/${encodeURIComponent(id)}/retry`);
}

/** `GET /api/ops/capacity`: the global pool, every route pool, the busiest owner and running pools, and running per task type. */
export function getCapacity(api: ApiClient): Promise<CapacityReport> {
  return api.get('/api/ops/capacity');
}

/** `GET /api/ops/recovery`: unresolved recovery operations, oldest first, each with its chain verification. */
export function listRecovery(api: ApiClient, state?: string): Promise<RecoveryPage> {
  return api.get('/api/ops/recovery', { state, limit: 100 });
}

/** `POST /api/ops/recovery/{id}/resolve-unknown`: resolves an `outcome_unknown` operation with evidence. */
export function resolveUnknown(api: ApiClient, id: string, resolution: unknown): Promise<ResolvedRecovery> {
  return api.post(`/api/ops/recovery/${encodeURIComponent(id)}/resolve-unknown`, resolution);
}

/** `POST /api/ops/dlq/redrive`: moves up to 100 dead letters back to the queue. */
export function redriveDlq(api: ApiClient): Promise<RedriveResult> {
  return api.post('/api/ops/dlq/redrive');
}

/** `GET /api/ops/sweeps`: the latest sweeper runs, newest first. */
export function listSweeps(api: ApiClient, limit = 50): Promise<SweepPage> {
  return api.get('/api/ops/sweeps', { limit });
}

/** `GET /api/ops/throughput?minutes=`: per-minute counts, oldest first. */
export function getThroughput(api: ApiClient, minutes: number): Promise<ThroughputReport> {
  return api.get('/api/ops/throughput', { minutes });
}

/**
 * Asks the API whether this token is an operator's: the cheapest operator read (one unresolved recovery operation).
 * @returns true when it answers; false when it answers 404 (a token without `ops:read` does not see the route).
 * @throws {ApiError} for any other failure (401, network, 5xx).
 */
export async function probeOperatorAccess(api: ApiClient): Promise<boolean> {
  try {
    await api.get('/api/ops/recovery', { limit: 1 });
    return true;
  } catch (error) {
    if (error instanceof ApiError && error.problem.status === 404) return false;
    throw error;
  }
}
