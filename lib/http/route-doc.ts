import type { z } from 'zod';

/**
 * What one route of the API tells the OpenAPI 3.1 document (`lib/http/openapi.ts`) about itself. Every route of
 * `API_ROUTES` must carry one (the `doc` field is required), so a route cannot be added without its contract, and
 * every schema here is the zod schema the code itself parses or answers with — the document reuses them, it never
 * restates them.
 */

/** The success statuses the API answers (docs/design.md §7): 200 read/replay/reuse, 201 created, 202 accepted for later work. */
export type SuccessStatus = 200 | 201 | 202;

/**
 * The error statuses a route may declare (docs/design.md §7, RFC 9457 bodies). 401, 405, 413, 415 and 500 are not listed
 * here: the generator adds 401 to every authenticated route, 405 to every route (another method on its path), 413 and
 * 415 to every route that takes a body, the 400 for a body to every route that takes none, and 500 to every route, so
 * no route can forget them.
 */
export type ProblemStatus = 400 | 403 | 404 | 409 | 422 | 429;

/**
 * Response headers a success may carry; the generator documents each one once: `Location` (RFC 9110 §10.2.2),
 * `Idempotent-Replayed` (IETF `Idempotency-Key` header draft) and `ETag` (RFC 9110 §8.8.3, strong).
 */
export type SuccessHeader = 'location' | 'idempotent-replayed' | 'etag';

/**
 * The groups routes are listed under, each with the description the documents give it (a document lists only the
 * tags its routes use).
 */
export const ROUTE_TAGS = {
  operations: 'The owner’s long-running operations: admit, read, list, cancel and retry (docs/design.md §7).',
  notifications: 'The owner’s terminal notifications: one per operation cycle that succeeded, failed or was cancelled.',
  settings: 'The owner’s own settings: AI on or off and the privacy mode; the plan is an operator-set entitlement.',
  jobs: 'The owner’s jobs: the subjects that feature operations (such as the strategy snapshot) work on.',
  'strategy snapshot': 'A feature producer: start producing a job’s strategy snapshot, or read the published one from cache.',
  operators: 'The operator surface (docs/design.md §8): every owner’s operations, capacity, recovery, dead letters and sweeps.',
  meta: 'The API’s own OpenAPI 3.1 description.',
} as const;

/** One of the {@link ROUTE_TAGS}. */
export type RouteTag = keyof typeof ROUTE_TAGS;

/** One success response of a route. */
export interface SuccessDoc {
  /** One sentence: when the route answers this status. */
  readonly description: string;
  /** The schema the handler passes the body through (`jsonResponse(status, schema, …)`). */
  readonly schema: z.ZodType;
  /** Headers it carries, each `true` when always present, `false` when only sometimes. @default none */
  readonly headers?: { readonly [H in SuccessHeader]?: boolean };
}

/** The OpenAPI metadata of one route. */
export interface RouteDoc {
  /** Unique, camelCase, stable: client generators name methods after it. */
  readonly operationId: string;
  /** The group the route is listed under. */
  readonly tag: RouteTag;
  /** A short imperative line. */
  readonly summary: string;
  /** What the route does and the rules a caller needs (limits, replay, cache-only…), in CommonMark. */
  readonly description: string;
  /**
   * The path parameters: one key per `{name}` of the route's path, no more (the generator throws otherwise). @default
   * none
   */
  readonly pathParams?: z.ZodObject;
  /** The query-string parameters: the schema the service parses the query with. @default none */
  readonly query?: z.ZodObject;
  /** Whether the route takes the `Idempotency-Key` request header (required when it does). @default false */
  readonly idempotencyKey?: boolean;
  /**
   * Whether the route answers conditional GETs (RFC 9110 §13.1.2): the generator documents the optional `If-None-Match`
   * request header and a `304 Not Modified` with the current `ETag` and no content. Its 200 should carry the `etag`
   * header. @default false
   */
  readonly conditional?: boolean;
  /** The JSON request body (required when declared): the schema the service parses it with. @default no body */
  readonly body?: { readonly schema: z.ZodType; readonly description: string };
  /** The success responses; at least one (the generator throws otherwise). */
  readonly success: { readonly [S in SuccessStatus]?: SuccessDoc };
  /** The problem responses the route may answer beyond 401/500, each with when it happens. */
  readonly problems: { readonly [S in ProblemStatus]?: string };
}
