import type { APIGatewayProxyEventV2WithJWTAuthorizer } from 'aws-lambda';
import { z } from 'zod';
import { UnauthorizedError } from '../errors.js';
import { FieldLimits } from '../validation/field-limits.js';
import { RouteNotFoundError } from './http-errors.js';

/**
 * Who the caller is (docs/design.md §7): in AWS the API Gateway HTTP API JWT authorizer verifies the bearer token and puts
 * its claims into the event; locally the dev server verifies HS256 tokens signed with `DEV_JWT_SECRET`
 * (`lib/local/dev-token.ts`) and passes the claims the same way. Either way the owner is the `sub` claim.
 */

/** A verified subject (the `sub` claim, the owner): 1–128 characters, the bounds of `owner_user_id`. */
export const SubjectSchema = z.string().min(1).max(FieldLimits.ownerUserId);

/**
 * The owner id of an API Gateway HTTP API (payload 2.0) event: `requestContext.authorizer.jwt.claims.sub`, which
 * the JWT authorizer sets only after verifying the token (AWS docs, "Control access to HTTP APIs with JWT
 * authorizers"). The Lambda refuses any event without it instead of trusting a route's configuration.
 * @returns the `sub` claim, 1–128 characters.
 * @throws {UnauthorizedError} when the claims or `sub` are missing, not a string, empty or longer than 128 characters.
 */
export function ownerFromEvent(event: APIGatewayProxyEventV2WithJWTAuthorizer): string {
  const parsed = SubjectSchema.safeParse(event.requestContext?.authorizer?.jwt?.claims?.sub);
  if (!parsed.success) throw new UnauthorizedError('The request carries no verified subject.');
  return parsed.data;
}

/** The OAuth scope that lets a caller read the operator surface (`GET /api/ops/…`, docs/design.md §8 "Ops surface"). */
export const OPS_READ_SCOPE = 'ops:read';

/**
 * The OAuth scope that lets a caller act on the operator surface (the `POST /api/ops/…` routes: cancel, retry,
 * resolve-unknown, redrive). Independent of {@link OPS_READ_SCOPE}: a console that acts and reads needs both.
 */
export const OPS_WRITE_SCOPE = 'ops:write';

/**
 * The OAuth scopes of an API Gateway HTTP API (payload 2.0) event, read like {@link ownerFromEvent}: the verified
 * `requestContext.authorizer.jwt.claims.scope` claim, space-separated (RFC 8693 §4.2; Cognito access tokens), merged
 * with `requestContext.authorizer.jwt.scopes`, the list the JWT authorizer derives from the token. A missing or
 * non-string claim and a missing list contribute nothing.
 */
export function scopesFromEvent(event: APIGatewayProxyEventV2WithJWTAuthorizer): ReadonlySet<string> {
  const jwt = event.requestContext?.authorizer?.jwt;
  const claim = z.string().safeParse(jwt?.claims?.scope);
  const listed = z.array(z.string()).safeParse(jwt?.scopes);
  return new Set([...(claim.success ? claim.data.split(/\s+/) : []), ...(listed.success ? listed.data : [])].filter((scope) => scope !== ''));
}

/**
 * Lets the request through only when its verified scopes hold `scope` exactly (no prefix or substring match). Anyone
 * else is told the route does not exist: an operator route is invisible, never a 401/403 that would confirm it is
 * there.
 * @throws {RouteNotFoundError} (HTTP 404) when `scope` is not among {@link scopesFromEvent}.
 */
export function requireScope(event: APIGatewayProxyEventV2WithJWTAuthorizer, scope: string): void {
  if (!scopesFromEvent(event).has(scope)) throw new RouteNotFoundError();
}
