import middy, { type MiddlewareObj, type MiddyfiedHandler } from '@middy/core';
import httpRouterHandler from '@middy/http-router';
import { createProcessLogger, type Logger } from '../logger.js';
import type { Observability } from '../observability/observability.js';
import { OwnerScope } from '../operations/scopes.js';
import { API_ROUTES, methodsOf } from './api-routes.js';
import { ownerFromEvent, requireOperator } from './auth.js';
import { isCorsPreflight } from './cors.js';
import { MethodNotAllowedError, RouteNotFoundError } from './http-errors.js';
import { checkRequestBody } from './json-body.js';
import { problemDetailsMiddleware } from './problem-details.js';
import { httpServerSpanMiddleware, inRequestSpan } from '../tracing/http-server-span.js';
import type { ApiDeps, ApiEvent, ApiResult, OperatorRoute, OwnerRoute } from './route-types.js';

export type { ApiDeps, ApiEvent, ApiResult } from './route-types.js';

/** The owner API Lambda handler: `(event, context) => Promise<ApiResult>`, with middy's `use`/`before`/… attached. */
export type ApiHandler = MiddyfiedHandler<ApiEvent, ApiResult>;

/** A path template as a pattern: `{name}` is one non-empty segment, everything else literal; one trailing `/` is allowed. */
function patternOf(path: string): RegExp {
  const literal = path.replace(/[.*+?^$()|[\]\\]/g, '\\$&');
  return new RegExp(`^${literal.replace(/\{[^/]+\}/g, '[^/]+')}/?$`);
}

/** The route templates as the router matches them. */
const ROUTE_PATTERNS = API_ROUTES.map((route) => ({ route, pattern: patternOf(route.path) }));

/**
 * Whether `method` + `path` is a public route (the OpenAPI document): the requests API Gateway lets through without the
 * JWT authorizer, so the local server lets them through without a token and the handler asks no claims of them.
 */
export function isPublicRequest(method: string, path: string): boolean {
  return ROUTE_PATTERNS.some(({ route, pattern }) => route.access === 'public' && (methodsOf(route) as readonly string[]).includes(method) && pattern.test(path));
}

/** 405 when the path names a route under another method (with the methods it does allow), else 404. */
function routeMiss(path: string): never {
  const allowed = [...new Set(ROUTE_PATTERNS.filter((entry) => entry.pattern.test(path)).flatMap((entry) => methodsOf(entry.route)))];
  throw allowed.length > 0 ? new MethodNotAllowedError(allowed) : new RouteNotFoundError();
}

/**
 * Answers a CORS preflight (`isCorsPreflight`) with **204**, no body, before any claim is asked for. In AWS none should
 * arrive: API Gateway's CORS configuration answers every preflight itself (and no `OPTIONS` route is deployed); should
 * one be routed here anyway, a 401 or 405 would break it, while a 204 lets API Gateway add its configured CORS headers
 * (it ignores any a backend sends, so the Lambda sends none).
 */
const answerPreflights: MiddlewareObj<ApiEvent, ApiResult> = {
  before: (request) => {
    const method = request.event.requestContext?.http?.method ?? '';
    return isCorsPreflight(method, request.event.headers ?? {}) ? { statusCode: 204 } : undefined;
  },
};

/**
 * Refuses, before routing, any event that carries no verified `sub` claim, except a public route's: API Gateway should
 * never send one (the JWT authorizer guards every other route), but the Lambda does not rely on the route
 * configuration for that.
 */
const requireVerifiedSubject: MiddlewareObj<ApiEvent, ApiResult> = {
  before: (request) => {
    const http = request.event.requestContext?.http;
    if (!isPublicRequest(http?.method ?? '', http?.path ?? '')) ownerFromEvent(request.event);
  },
};

/**
 * Hides operator routes, before routing, from callers who are not operators with their scope (`requireOperator`: the
 * operator rule of `deps`, then the route's scope): a path that names an operator route — under any method — answers
 * 404 as if it did not exist, so neither a GET nor a 405's `Allow` tells a non-operator it is there. Operators with the
 * scope go on to the router (and get a 405 for a wrong method, like any route). Only such a path resolves `deps`.
 */
function hideOperatorRoutes(resolve: () => Promise<ApiDeps>): MiddlewareObj<ApiEvent, ApiResult> {
  return {
    before: async (request) => {
      const path = request.event.requestContext?.http?.path ?? '';
      const operatorRoutes = ROUTE_PATTERNS.filter(({ route, pattern }) => route.access === 'operator' && pattern.test(path));
      if (operatorRoutes.length === 0) return;
      const { operatorRule } = await resolve();
      for (const { route } of operatorRoutes) if (route.access === 'operator') requireOperator(request.event, operatorRule, route.scope);
    },
  };
}

/** Calls `route` for `event`: owner routes get the caller's owner scope; operator routes re-check the operator first. */
function dispatch(route: OwnerRoute | OperatorRoute, deps: ApiDeps, event: ApiEvent): Promise<ApiResult> {
  if (route.access === 'owner') return route.handle(new OwnerScope(deps.store, ownerFromEvent(event)), deps, event);
  requireOperator(event, deps.operatorRule, route.scope);
  return route.handle(deps, event);
}

/**
 * Builds the API Lambda (owner API, docs/design.md §7, and the operator routes of §8) for API Gateway HTTP API payload 2.0
 * events: middy with `@middy/http-router` over {@link API_ROUTES}, a check that the JWT authorizer's `sub` claim is
 * present (on every route but the public OpenAPI document, which answers without dependencies or claims), the
 * operator-route gate (404 unless the caller passes the operator rule and holds the route's scope, `ops:read` or
 * `ops:write`), the request-body rules of every routed
 * request (`checkRequestBody`: 400 for a body where the route takes none, 415 for a body that is not JSON), a 204 for a CORS preflight that
 * reaches it (no claims asked; API Gateway answers those itself, see `answerPreflights`), and the problem-details middleware
 * that turns every error into RFC 9457 `application/problem+json` — including 401 (no claims), 404 (no such path, or an
 * operator path to a caller who is not an operator with the scope) and 405 (path exists, method does not; with `Allow`).
 *
 * The router matches `requestContext.http.path`; deploy on the `$default` stage (no stage prefix in the path).
 * @param deps the dependencies, or a function resolving them on first use (a Lambda cold start builds them on the
 * first invocation, not at import; memoise it, e.g. with `lazy` from `lib/runtime.ts`). Until they resolve, 500s are
 * logged with the observability's logger (or a process logger).
 * Every request is a SERVER span (`httpServerSpanMiddleware`), continuing a valid incoming `traceparent`.
 * @param observability when given, its middlewares come first: Lambda context on every log line, the invocation's
 * metrics published when it ends. @default none (tests)
 */
export function createApiHandler(deps: ApiDeps | (() => Promise<ApiDeps>), observability?: Observability): ApiHandler {
  const resolve = typeof deps === 'function' ? deps : async () => deps;
  let logger: Logger = typeof deps === 'function' ? (observability?.logger ?? createProcessLogger()) : deps.logger;
  const answer = (route: (typeof API_ROUTES)[number], event: ApiEvent): Promise<ApiResult> =>
    inRequestSpan(event, route, async () => {
      checkRequestBody(event, route.doc.body !== undefined);
      // A public route needs neither the dependencies (no database connection on a cold start) nor claims.
      if (route.access === 'public') return route.handle(event);
      const runtime = await resolve();
      logger = runtime.logger;
      return dispatch(route, runtime, event);
    });
  const routes = API_ROUTES.flatMap((route) =>
    methodsOf(route).map((method) => ({
      method,
      path: route.path,
      // HEAD: the GET answer's status and headers, without its body.
      handler: async (event: ApiEvent): Promise<ApiResult> => {
        const result = await answer(route, event);
        if (method !== 'HEAD') return result;
        const { body: _body, isBase64Encoded: _encoded, ...head } = result;
        return head;
      },
    })),
  );
  // The preflight answer comes first: middy skips every `after` of a chain that a `before` answers early, so nothing
  // a later middleware opens (log context, metrics, the SERVER span) may be left open by it.
  return middy<ApiEvent, ApiResult>()
    .use(answerPreflights)
    .use([...(observability?.middlewares ?? [])])
    .use(httpServerSpanMiddleware())
    .use(problemDetailsMiddleware({ logger: () => logger }))
    .use(requireVerifiedSubject)
    .use(hideOperatorRoutes(resolve))
    .handler(httpRouterHandler<ApiEvent, ApiResult>({ routes, notFoundResponse: ({ path }) => routeMiss(path) }));
}
