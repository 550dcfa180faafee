import type { APIGatewayProxyEventV2WithJWTAuthorizer, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { OwnerScope } from '../operations/scopes.js';
import type { Runtime } from '../runtime.js';
import type { RouteDoc } from './route-doc.js';

/** An API Gateway HTTP API (payload 2.0) event that passed a JWT authorizer. */
export type ApiEvent = APIGatewayProxyEventV2WithJWTAuthorizer;

/** What every API response is: status, headers and a JSON (or problem+json) body. */
export type ApiResult = APIGatewayProxyStructuredResultV2;

/**
 * What the API needs: the database, the task types it admits, the operation policy, the capacity policy
 * (admission limits, docs/design.md §4), the wake-up queue, the dead-letter queue when one is configured (the operator's
 * redrive), the modules of the recovery ledger (their reconciliation actions, docs/design.md §8), a logger, the metrics the
 * services count into, and the operator rule (who may use the operator routes). A `Runtime` is one.
 */
export type ApiDeps = Pick<
  Runtime,
  'store' | 'registry' | 'policy' | 'capacity' | 'wakeups' | 'deadLetters' | 'recoveryModules' | 'logger' | 'metrics' | 'operatorRule'
>;

/**
 * What every route has: a method, a path template (`{name}` is a path parameter) and its OpenAPI metadata, from which
 * `lib/http/openapi.ts` builds the document — required, so no route exists without its contract.
 */
interface RouteBase {
  readonly method: 'GET' | 'POST' | 'PATCH';
  readonly path: string;
  readonly doc: RouteDoc;
}

/** A route of the owner API (docs/design.md §7): it acts for the authenticated owner, the JWT `sub`. */
export interface OwnerRoute extends RouteBase {
  readonly access: 'owner';
  /** One `lib/` service call for the authenticated owner, then DTO mapping; no SQL or business rule here. */
  handle(scope: OwnerScope, deps: ApiDeps, event: ApiEvent): Promise<ApiResult>;
}

/**
 * A route of the operator surface (docs/design.md §8): not owner-scoped, and invisible — a 404, for every method — to any
 * caller that fails the operator rule or whose verified scopes lack `scope` (`requireOperator`, checked by the API
 * handler before routing and again before `handle`).
 */
export interface OperatorRoute extends RouteBase {
  readonly access: 'operator';
  /** The OAuth scope a caller needs, e.g. `ops:read`. */
  readonly scope: string;
  /** One `lib/` service call, then DTO mapping; no SQL or business rule here. */
  handle(deps: ApiDeps, event: ApiEvent): Promise<ApiResult>;
}

/**
 * A route anyone may call, without a token (the OpenAPI document): API Gateway deploys it without the JWT authorizer,
 * the local server lets it through unverified, and the API handler neither requires nor reads claims for it.
 */
export interface PublicRoute extends RouteBase {
  readonly access: 'public';
  /** Answers from what the process already holds: no dependencies, no owner. */
  handle(event: ApiEvent): Promise<ApiResult>;
}

/** One route of the API. */
export type ApiRoute = OwnerRoute | OperatorRoute | PublicRoute;
