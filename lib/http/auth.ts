import type { APIGatewayProxyEventV2WithJWTAuthorizer } from 'aws-lambda';
import { jwtVerify, SignJWT } from 'jose';
import { z } from 'zod';
import { UnauthorizedError } from '../errors.js';
import { FieldLimits } from '../validation/field-limits.js';
import { parseOrThrow } from '../validation/parse-or-throw.js';
import { RouteNotFoundError } from './http-errors.js';

/**
 * Who the caller is (DESIGN §7): in AWS the API Gateway HTTP API JWT authorizer verifies the bearer token and puts
 * its claims into the event; locally the dev server verifies HS256 tokens signed with `DEV_JWT_SECRET` (below)
 * and passes the claims the same way. Either way the owner is the `sub` claim.
 */

/** A verified subject: 1–128 characters, the bounds of `owner_user_id`. */
const SubjectSchema = z.string().min(1).max(FieldLimits.ownerUserId);

/** An OAuth scope token (RFC 6749 §3.3, narrowed to a safe alphabet). */
const ScopeTokenSchema = z.string().regex(/^[A-Za-z0-9._:/-]{1,64}$/, 'must be 1–64 characters of A-Z a-z 0-9 . _ : / -');

/** `iss` of every dev token; {@link verifyDevToken} refuses any other issuer. */
export const DEV_TOKEN_ISSUER = 'durable-ops-dev';

/** `aud` of every dev token; {@link verifyDevToken} refuses any other audience. */
export const DEV_TOKEN_AUDIENCE = 'durable-ops-api';

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

/** The OAuth scope that lets a caller read the operator surface (`GET /api/ops/…`, DESIGN §8 "Ops surface"). */
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
 * there (issue 4).
 * @throws {RouteNotFoundError} (HTTP 404) when `scope` is not among {@link scopesFromEvent}.
 */
export function requireScope(event: APIGatewayProxyEventV2WithJWTAuthorizer, scope: string): void {
  if (!scopesFromEvent(event).has(scope)) throw new RouteNotFoundError();
}

/**
 * The claims of a verified dev token: `sub` (the owner), `exp`/`iat` (seconds since the epoch), and optionally
 * `scope`, space-separated as in RFC 8693 §4.2. Other claims are kept as they are.
 */
export const DevTokenClaimsSchema = z.looseObject({
  sub: SubjectSchema,
  exp: z.number().int(),
  iat: z.number().int().optional(),
  scope: z.string().max(1024).optional(),
});

/** See {@link DevTokenClaimsSchema}. */
export type DevTokenClaims = z.infer<typeof DevTokenClaimsSchema>;

function hmacKey(secret: string): Uint8Array {
  return new TextEncoder().encode(secret);
}

/**
 * Verifies a dev bearer token the way the local server's stand-in for the API Gateway JWT authorizer must: the
 * signature with `secret` under **HS256 only** (so `alg: none`, other HMAC sizes and asymmetric algorithms are
 * refused — RFC 8725 §3.1), `iss` = {@link DEV_TOKEN_ISSUER}, `aud` = {@link DEV_TOKEN_AUDIENCE}, a present and
 * unexpired `exp`, and a `sub` of 1–128 characters.
 * @param token the compact JWS, without the `Bearer ` prefix.
 * @throws {UnauthorizedError} for any failure; the cause (a jose or zod error) is attached for logs only.
 */
export async function verifyDevToken(token: string, secret: string): Promise<DevTokenClaims> {
  try {
    const { payload } = await jwtVerify(token, hmacKey(secret), {
      algorithms: ['HS256'],
      issuer: DEV_TOKEN_ISSUER,
      audience: DEV_TOKEN_AUDIENCE,
      requiredClaims: ['sub', 'exp'],
    });
    return DevTokenClaimsSchema.parse(payload);
  } catch (error) {
    throw new UnauthorizedError('The bearer token is missing, invalid or expired.', { cause: error });
  }
}

/** Options of {@link signDevToken}. */
export interface SignDevTokenOptions {
  /** Lifetime as a jose time span: a number and a unit, e.g. `'30m'`, `'12h'`, `'7d'`. @default '1h' */
  expiresIn?: string;
  /** OAuth scopes, written to the `scope` claim space-separated (RFC 8693 §4.2). @default none */
  scope?: readonly string[];
}

/**
 * Signs a dev token for the local stack (HS256 with `DEV_JWT_SECRET`; see `npm run token`). Never used in AWS,
 * where an identity provider issues tokens and API Gateway verifies them.
 * @returns the compact JWS.
 * @throws {ValidationError} when `sub` is empty or longer than 128 characters, or a scope is malformed.
 * @throws {TypeError} when `expiresIn` is not a time span jose understands.
 */
export async function signDevToken(sub: string, secret: string, options: SignDevTokenOptions = {}): Promise<string> {
  const subject = parseOrThrow(SubjectSchema, sub, 'sub');
  const scope = parseOrThrow(z.array(ScopeTokenSchema).max(32), options.scope ?? [], 'scope');
  return new SignJWT(scope.length > 0 ? { scope: scope.join(' ') } : {})
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(subject)
    .setIssuer(DEV_TOKEN_ISSUER)
    .setAudience(DEV_TOKEN_AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(options.expiresIn ?? '1h')
    .sign(hmacKey(secret));
}
