import type { APIGatewayProxyEventV2WithJWTAuthorizer } from 'aws-lambda';
import { z } from 'zod';
import { UnauthorizedError } from '../errors.js';
import { OwnerUserIdSchema } from '../owners/owner-user-id.js';
import { RouteNotFoundError } from './http-errors.js';
import { passesOperatorRule, type OperatorRule } from './operator-identity.js';

/**
 * Who the caller is (docs/design.md §7): in AWS the API Gateway HTTP API JWT authorizer verifies the bearer token and puts
 * its claims into the event; locally the dev server verifies HS256 tokens signed with `DEV_JWT_SECRET`
 * (`lib/local/dev-token.ts`) and passes the claims the same way. Either way the owner is the `sub` claim.
 */

/**
 * A verified subject (the `sub` claim, the owner): the one owner-id rule, `OwnerUserIdSchema` — well-formed text of
 * 1–128 characters counted as code points, the bounds of `owner_user_id`.
 */
export const SubjectSchema = OwnerUserIdSchema;

/**
 * The owner id of an API Gateway HTTP API (payload 2.0) event: `requestContext.authorizer.jwt.claims.sub`, which
 * the JWT authorizer sets only after verifying the token (AWS docs, "Control access to HTTP APIs with JWT
 * authorizers"). The Lambda refuses any event without it instead of trusting a route's configuration.
 * @returns the `sub` claim, 1–128 characters.
 * @throws {UnauthorizedError} when the claims or `sub` are missing, not a string, empty, not well-formed (a lone
 * surrogate) or longer than 128 characters (code points).
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
 * `requestContext.authorizer.jwt.claims.scope` claim, split exactly as the JWT authorizer reads it — on the space
 * character U+0020 only (RFC 6749 §3.3: "a list of space-delimited, case-sensitive strings", each scope-token printable
 * ASCII without space; the authorizer matches a route's scopes against the `scope`/`scp` claim, AWS docs "Control
 * access to HTTP APIs with JWT authorizers in API Gateway") — so `"ops:read\u00a0ops:write"` (no-break space; tab and
 * newline likewise) is one unknown scope that grants nothing. Merged with `requestContext.authorizer.jwt.scopes`, the
 * list the JWT authorizer derives from the token, each item taken whole. A missing or non-string claim and a missing
 * list contribute nothing. An `scp` claim (Okta, Entra ID put scopes there) is not read: with such a provider, map
 * the scopes into `scope` (a claims mapping or a custom authorizer), or operator routes stay 404.
 */
export function scopesFromEvent(event: APIGatewayProxyEventV2WithJWTAuthorizer): ReadonlySet<string> {
  const jwt = event.requestContext?.authorizer?.jwt;
  const claim = z.string().safeParse(jwt?.claims?.scope);
  const listed = z.array(z.string()).safeParse(jwt?.scopes);
  return new Set([...(claim.success ? claim.data.split(' ') : []), ...(listed.success ? listed.data : [])].filter((scope) => scope !== ''));
}

/**
 * Lets an operator request through only when its verified claims pass the operator rule (`lib/http/operator-identity.ts`:
 * the operator issuer/audience, group or subject; no rule configured passes nothing) **and** its verified scopes hold
 * `scope` exactly (no prefix or substring match), which chooses read (`ops:read`) vs write (`ops:write`). Anyone else is
 * told the route does not exist: an operator route is invisible, never a 401/403 that would confirm it is there.
 * @throws {RouteNotFoundError} (HTTP 404) when the rule is not passed or `scope` is not among {@link scopesFromEvent}.
 */
export function requireOperator(event: APIGatewayProxyEventV2WithJWTAuthorizer, rule: OperatorRule | undefined, scope: string): void {
  if (!passesOperatorRule(rule, event) || !scopesFromEvent(event).has(scope)) throw new RouteNotFoundError();
}
