import { jwtVerify, SignJWT } from 'jose';
import { z } from 'zod';
import { UnauthorizedError } from '../errors.js';
import { SubjectSchema } from '../http/auth.js';
import { parseOrThrow } from '../validation/parse-or-throw.js';
import { DEV_OPERATOR_GROUP, DEV_OPERATOR_GROUP_CLAIM } from './dev-operator.js';

/**
 * Dev tokens: the bearer tokens of the local stack (docs/design.md §9), HS256 JWTs signed with the local dev secret
 * (`DEV_JWT_SECRET`, or the one generated in the local data directory: `lib/local/dev-secret.ts`), which the
 * local server verifies in place of the API Gateway JWT authorizer (`lib/local/local-http-server.ts`). Never used in
 * AWS, where an identity provider issues tokens and API Gateway verifies them; the Lambda reads the claims the same
 * way either way (`lib/http/auth.ts`).
 */

/** An OAuth scope token (RFC 6749 §3.3, narrowed to a safe alphabet). */
const ScopeTokenSchema = z.string().regex(/^[A-Za-z0-9._:/-]{1,64}$/, 'must be 1–64 characters of A-Z a-z 0-9 . _ : / -');

/** `iss` of every dev token; {@link verifyDevToken} refuses any other issuer. */
export const DEV_TOKEN_ISSUER = 'durable-ops-dev';

/** `aud` of every dev token; {@link verifyDevToken} refuses any other audience. */
export const DEV_TOKEN_AUDIENCE = 'durable-ops-api';

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

/**
 * How far in the future a dev token's `iat` may be, in **seconds** (60): room for clocks a little apart, never a token
 * "issued" later than it is verified. RFC 7519 §4.1.6 defines `iat` as the time the token was issued.
 */
export const DEV_TOKEN_IAT_SKEW_SECONDS = 60;

function hmacKey(secret: string): Uint8Array {
  return new TextEncoder().encode(secret);
}

/**
 * Verifies a dev bearer token the way the local server's stand-in for the API Gateway JWT authorizer must: the
 * signature with `secret` under **HS256 only** (so `alg: none`, other HMAC sizes and asymmetric algorithms are
 * refused — RFC 8725 §3.1), `iss` = {@link DEV_TOKEN_ISSUER}, `aud` = {@link DEV_TOKEN_AUDIENCE}, a present and
 * unexpired `exp`, an `iat`, when present, at most {@link DEV_TOKEN_IAT_SKEW_SECONDS} in the future, and a `sub` of
 * 1–128 characters. (jose checks a future `iat` only together with a maximum token age, which dev tokens do not have,
 * so that check is made here.)
 * @param token the compact JWS, without the `Bearer ` prefix.
 * @param now the time to verify at. @default the current time
 * @throws {UnauthorizedError} for any failure; the cause (a jose or zod error) is attached for logs only.
 */
export async function verifyDevToken(token: string, secret: string, now: Date = new Date()): Promise<DevTokenClaims> {
  try {
    const { payload } = await jwtVerify(token, hmacKey(secret), {
      algorithms: ['HS256'],
      issuer: DEV_TOKEN_ISSUER,
      audience: DEV_TOKEN_AUDIENCE,
      requiredClaims: ['sub', 'exp'],
      currentDate: now,
    });
    const claims = DevTokenClaimsSchema.parse(payload);
    if (claims.iat !== undefined && claims.iat > Math.floor(now.getTime() / 1000) + DEV_TOKEN_IAT_SKEW_SECONDS) {
      throw new Error(`"iat" is more than ${DEV_TOKEN_IAT_SKEW_SECONDS} s in the future`);
    }
    return claims;
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
  /**
   * Groups, written to the {@link DEV_OPERATOR_GROUP_CLAIM} claim as an array (as Cognito writes `cognito:groups`).
   * @default [{@link DEV_OPERATOR_GROUP}] when a scope starts with `ops:` (the local stack's operator rule lets it in,
   * `lib/local/dev-operator.ts`), else none; `[]` signs an ops-scoped token that is not an operator's
   */
  groups?: readonly string[];
}

/**
 * Signs a dev token for the local stack (HS256 with the local dev secret; see `npm run token`). Never used in AWS,
 * where an identity provider issues tokens and API Gateway verifies them.
 * @returns the compact JWS.
 * @throws {ValidationError} when `sub` is empty or longer than 128 characters, or a scope is malformed.
 * @throws {TypeError} when `expiresIn` is not a time span jose understands.
 */
export async function signDevToken(sub: string, secret: string, options: SignDevTokenOptions = {}): Promise<string> {
  const subject = parseOrThrow(SubjectSchema, sub, 'sub');
  const scope = parseOrThrow(z.array(ScopeTokenSchema).max(32), options.scope ?? [], 'scope');
  const groups = parseOrThrow(
    z.array(ScopeTokenSchema).max(32),
    options.groups ?? (scope.some((s) => s.startsWith('ops:')) ? [DEV_OPERATOR_GROUP] : []),
    'groups',
  );
  return new SignJWT({ ...(scope.length > 0 ? { scope: scope.join(' ') } : {}), ...(groups.length > 0 ? { [DEV_OPERATOR_GROUP_CLAIM]: groups } : {}) })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(subject)
    .setIssuer(DEV_TOKEN_ISSUER)
    .setAudience(DEV_TOKEN_AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(options.expiresIn ?? '1h')
    .sign(hmacKey(secret));
}
