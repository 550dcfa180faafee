import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { UnauthorizedError } from '../../lib/errors.js';
import { DEV_TOKEN_AUDIENCE, DEV_TOKEN_IAT_SKEW_SECONDS, DEV_TOKEN_ISSUER, verifyDevToken } from '../../lib/local/dev-token.js';

const SECRET = 'a-dev-token-test-secret-of-32-characters';
const NOW = new Date('2026-03-01T12:00:00Z');
const nowSeconds = Math.floor(NOW.getTime() / 1000);

/** A dev token valid in every way but its `iat`, which is `iat` (seconds since the epoch) or absent. */
function tokenIssuedAt(iat: number | undefined): Promise<string> {
  const claims = { sub: 'alice', iss: DEV_TOKEN_ISSUER, aud: DEV_TOKEN_AUDIENCE, exp: nowSeconds + 7200, ...(iat === undefined ? {} : { iat }) };
  return new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(SECRET));
}

describe('dev token verification and iat', () => {
  it('a token issued more than 60 s in the future is refused as unauthorized', async () => {
    expect(DEV_TOKEN_IAT_SKEW_SECONDS).toBe(60);
    for (const ahead of [DEV_TOKEN_IAT_SKEW_SECONDS + 1, 3600, 10 * 365 * 86_400]) {
      await expect(verifyDevToken(await tokenIssuedAt(nowSeconds + ahead), SECRET, NOW), `${ahead} s ahead`).rejects.toThrow(UnauthorizedError);
    }
  });

  it('a token issued now, in the past, up to 60 s ahead (clock skew), or without iat is accepted', async () => {
    for (const iat of [nowSeconds, nowSeconds - 3600, nowSeconds + DEV_TOKEN_IAT_SKEW_SECONDS, undefined]) {
      await expect(verifyDevToken(await tokenIssuedAt(iat), SECRET, NOW), `iat ${iat}`).resolves.toMatchObject({ sub: 'alice' });
    }
  });
});
