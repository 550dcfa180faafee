import { describe, expect, it } from 'vitest';
import { SecretInEvidenceError, ValidationError } from '../../lib/errors.js';
import { EvidenceLimits, EvidenceSchema, parseEvidence } from '../../lib/recovery/evidence.js';
import type { SecretKind } from '../../lib/recovery/secret-detector.js';

// Credential-shaped fixtures are assembled at run time so that no token-shaped literal sits in the source
// (secret scanners and push protection would flag them). None of them is a real credential.
const filler = (length: number, alphabet = 'Ab3Cd4Ef5Gh6Jk7Mn8Pq9Rs2Tu'): string =>
  Array.from({ length }, (_, i) => alphabet[i % alphabet.length]).join('');
const b64url = (text: string): string => Buffer.from(text).toString('base64url');
const jwt = [b64url('{"alg":"HS256","typ":"JWT"}'), b64url('{"sub":"owner-1","scope":"ops:read"}'), filler(43)].join('.');

function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

/** Everything an error would carry to a log line or a client: its message and its own fields. */
function rendered(error: unknown): string {
  return `${String(error)} ${JSON.stringify(error)}`;
}

describe('evidence: accepted shapes', () => {
  it('opaque references, digests, counts, result codes and ids are accepted unchanged', () => {
    const evidence = {
      objectRef: 's3://durable-ops-artifacts/owners/o-1/report.json',
      requestDigest: `sha256:${'0123456789abcdef'.repeat(4)}`,
      itemCount: 3,
      bytesWritten: 52_428_800,
      resultCode: 'HTTP_409',
      providerRequestId: 'req_01HZX3Q7W8M4T2V9K6N5B1C0DE',
      operationId: '0b6f4c1e-8f7a-4b7e-9c55-2a1d3e4f5a6b',
      messageId: '7c0e2f0a-5a42-4b4f-8f0e-1b2c3d4e5f60',
      configRef: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:db-credentials-AbCdEf',
      wwwAuthenticate: 'Bearer error="invalid_token"',
      providerMessage: 'Basic auth not supported',
      promptTokens: 1200,
      completion_tokens: 87,
      verified: true,
      previousAttempt: null,
      objectKeys: ['s3://bucket/a', 's3://bucket/b', 42, false, null],
    };
    const parsed = parseEvidence(evidence, 'evidence');
    expect(parsed).toEqual(evidence);
    expect(parsed).not.toBe(evidence);
  });

  it('the bounds themselves are accepted: 32 keys, a 64-character key, 512-character strings, 32-item arrays', () => {
    const evidence: Record<string, unknown> = Object.fromEntries(
      Array.from({ length: EvidenceLimits.keys }, (_, i) => [`field${i}`, i]),
    );
    evidence.field0 = 'x'.repeat(EvidenceLimits.stringLength);
    evidence.field1 = Array.from({ length: EvidenceLimits.arrayItems }, () => 'y'.repeat(EvidenceLimits.stringLength));
    delete evidence.field2;
    evidence[`k${'e'.repeat(EvidenceLimits.keyLength - 1)}`] = 1;
    expect(Object.keys(evidence)).toHaveLength(EvidenceLimits.keys);
    expect(parseEvidence(evidence, 'evidence')).toEqual(evidence);
  });

  it('an empty object is valid evidence', () => {
    expect(parseEvidence({}, 'metadata')).toEqual({});
  });
});

describe('evidence: secret-looking values are refused without being echoed', () => {
  const cases: readonly (readonly [string, SecretKind, string])[] = [
    ['a PEM private key', 'pem_block', `-----BEGIN RSA PRIVATE KEY-----\n${filler(64)}\n-----END RSA PRIVATE KEY-----`],
    ['a PEM certificate (any BEGIN block)', 'pem_block', `-----BEGIN CERTIFICATE-----\n${filler(64)}`],
    ['a JWT', 'jwt', jwt],
    ['a JWT inside text', 'jwt', `forwarded ${jwt} upstream`],
    ['a URL with user:password', 'url_credentials', `postgres://app:${filler(12)}@db.internal:5432/app`],
    ['a URL with only a password', 'url_credentials', `redis://:${filler(12)}@cache.internal:6379`],
    ['a bearer token', 'bearer_token', `Bearer ${filler(32)}`],
    ['a lower-case bearer token', 'bearer_token', `authorization: bearer ${filler(24)}`],
    ['basic credentials', 'basic_credentials', `Basic ${Buffer.from(`svc:${filler(10)}`).toString('base64')}`],
    ['an AWS access key id', 'aws_access_key_id', `AKIA${filler(16, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567')}`],
    ['an AWS temporary access key id', 'aws_access_key_id', `key ASIA${filler(16, 'QRSTUVWXYZ234567')} used`],
    ['a GitHub personal access token', 'github_token', `ghp_${filler(36)}`],
    ['a GitHub OAuth token', 'github_token', `gho_${filler(36)}`],
    ['a GitHub app server token', 'github_token', `ghs_${filler(36)}`],
    ['a GitHub user-to-server token', 'github_token', `ghu_${filler(36)}`],
    ['a GitHub fine-grained token', 'github_token', `github_pat_${filler(22)}_${filler(59)}`],
    ['a Slack bot token', 'slack_token', `xoxb-${filler(11, '0123456789')}-${filler(24)}`],
    ['a Slack user token', 'slack_token', `xoxp-${filler(11, '0123456789')}-${filler(24)}`],
    ['an OpenAI-style key', 'openai_api_key', `sk-${filler(48)}`],
    ['an OpenAI project key', 'openai_api_key', `sk-proj-${filler(40)}_${filler(20)}`],
    ['a Stripe live secret key', 'stripe_secret_key', `sk_live_${filler(24)}`],
    ['a Stripe restricted key', 'stripe_secret_key', `rk_live_${filler(24)}`],
    ['password=', 'credential_assignment', `password=${filler(10)}`],
    ['PASSWORD : (any case, colon)', 'credential_assignment', `PASSWORD : ${filler(10)}`],
    ['passwd:', 'credential_assignment', `passwd:${filler(10)}`],
    ['pwd=', 'credential_assignment', `user=svc;pwd=${filler(10)}`],
    ['secret=', 'credential_assignment', `secret=${filler(10)}`],
    ['token= in a query string', 'credential_assignment', `https://api.example.com/v1/x?access_token=${filler(20)}`],
    ['api_key=', 'credential_assignment', `api_key=${filler(20)}`],
    ['apikey:', 'credential_assignment', `ApiKey: ${filler(20)}`],
    ['an AWS secret access key assignment', 'credential_assignment', `aws_secret_access_key=${filler(40)}`],
    ['a JSON-encoded password', 'credential_assignment', `{"user":"svc","password":"${filler(10)}"}`],
  ];

  it.each(cases)('%s is refused as %s; the error names the path, never the value', (_name, kind, value) => {
    const error = thrown(() => parseEvidence({ resultCode: 'HTTP_200', providerResponse: value }, 'evidence'));
    expect(error).toBeInstanceOf(SecretInEvidenceError);
    const secretError = error as SecretInEvidenceError;
    expect(secretError.code).toBe('secret_in_evidence');
    expect(secretError.paths).toEqual(['evidence.providerResponse']);
    expect(secretError.kinds).toEqual([kind]);
    expect(secretError.message).toContain('evidence.providerResponse');
    expect(secretError.message).toContain(kind);
    expect(rendered(error)).not.toContain(value);
  });

  it('a secret inside an array element is refused, and the path names the element', () => {
    const token = `Bearer ${filler(40)}`;
    const error = thrown(() => parseEvidence({ headers: ['HTTP_401', token, 'retry-after=3'] }, 'evidence'));
    expect(error).toBeInstanceOf(SecretInEvidenceError);
    expect((error as SecretInEvidenceError).paths).toEqual(['evidence.headers.1']);
    expect((error as SecretInEvidenceError).kinds).toEqual(['bearer_token']);
    expect(rendered(error)).not.toContain(token);
  });

  it('every secret-looking path is reported at once, under the caller-given prefix', () => {
    const error = thrown(() =>
      parseEvidence({ a: `ghp_${filler(36)}`, ok: 'HTTP_200', b: ['x', `sk_live_${filler(24)}`], password: 'hunter2hunter2' }, 'metadata'),
    );
    expect(error).toBeInstanceOf(SecretInEvidenceError);
    expect((error as SecretInEvidenceError).paths).toEqual(['metadata.a', 'metadata.b.1', 'metadata.password']);
    expect((error as SecretInEvidenceError).kinds).toEqual(['github_token', 'stripe_secret_key', 'secret_key_name']);
    expect(rendered(error)).not.toContain('hunter2');
  });
});

describe('evidence: keys that name a secret are refused whatever their value', () => {
  // A password has no recognisable shape (an AWS secret access key is caught as a high-entropy token): only its
  // name gives it away.
  const shapelessSecret = 'correct-horse-battery-staple';

  it.each([
    'password',
    'dbPassword',
    'passwd',
    'secret',
    'clientSecret',
    'aws_secret_access_key',
    'AWS_SECRET_ACCESS_KEY',
    'secretAccessKey',
    'token',
    'accessToken',
    'refresh_token',
    'tokenSha256',
    'apiKey',
    'api_key',
    'x-api-key',
    'privateKey',
    'private-key.pem',
    'credentials',
    'Authorization',
    'set-cookie',
    'sessionId',
    'password2',
  ])('key %s is refused with kind secret_key_name', (key) => {
    const error = thrown(() => parseEvidence({ [key]: shapelessSecret }, 'evidence'));
    expect(error).toBeInstanceOf(SecretInEvidenceError);
    expect((error as SecretInEvidenceError).paths).toEqual([`evidence.${key}`]);
    expect((error as SecretInEvidenceError).kinds).toEqual(['secret_key_name']);
    expect(rendered(error)).not.toContain(shapelessSecret);
  });

  it('the name alone is enough: even a count or null under a secret name is refused', () => {
    expect(() => parseEvidence({ sessionCount: 2 }, 'evidence')).toThrow(SecretInEvidenceError);
    expect(() => parseEvidence({ apiKey: null }, 'evidence')).toThrow(SecretInEvidenceError);
  });

  it('neutral names for digests and references are accepted', () => {
    const evidence = { requestDigest: `sha256:${'ab'.repeat(32)}`, keyRef: 'kms:alias/recovery', tokens: 5, promptTokens: 10 };
    expect(parseEvidence(evidence, 'evidence')).toEqual(evidence);
  });

  it('a key that is itself a credential is refused and reported by position, never by name', () => {
    const key = `AKIA${filler(16, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567')}`;
    const error = thrown(() => parseEvidence({ resultCode: 'HTTP_200', [key]: 1 }, 'evidence'));
    expect(error).toBeInstanceOf(SecretInEvidenceError);
    expect((error as SecretInEvidenceError).paths).toEqual(['evidence.<key 1>']);
    expect((error as SecretInEvidenceError).kinds).toEqual(['aws_access_key_id']);
    expect(rendered(error)).not.toContain(key);
  });
});

describe('evidence: wrong shapes are refused with ValidationError', () => {
  function validationError(value: unknown): ValidationError {
    const error = thrown(() => parseEvidence(value, 'evidence'));
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }

  it('a nested object is refused at its path', () => {
    const error = validationError({ ok: 1, provider: { status: 409 } });
    expect(error.code).toBe('validation_failed');
    expect(error.issues).toEqual([{ path: 'evidence.provider', message: expect.stringContaining('no nested objects') }]);
  });

  it('an object inside an array is refused at the element', () => {
    expect(validationError({ items: ['a', { b: 1 }] }).issues.map((issue) => issue.path)).toEqual(['evidence.items.1']);
  });

  it('more than 32 keys is refused', () => {
    const error = validationError(Object.fromEntries(Array.from({ length: EvidenceLimits.keys + 1 }, (_, i) => [`field${i}`, i])));
    expect(error.issues).toEqual([{ path: 'evidence', message: 'must have at most 32 keys' }]);
  });

  it('too many keys is reported even when a value is also wrong', () => {
    const tooMany: Record<string, unknown> = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`field${i}`, i]));
    tooMany.field0 = { nested: true };
    expect(validationError(tooMany).issues.map((issue) => issue.path)).toEqual(['evidence.field0', 'evidence']);
  });

  it('a string over 512 characters is refused without echoing it', () => {
    const long = `Bearer ${'z'.repeat(EvidenceLimits.stringLength)}`;
    const error = validationError({ providerResponse: long });
    expect(error.issues).toEqual([{ path: 'evidence.providerResponse', message: 'must be at most 512 characters' }]);
    expect(rendered(error)).not.toContain('zzzzzzzz');
  });

  it('a string over 512 characters inside an array is refused at the element', () => {
    const error = validationError({ parts: ['ok', 'q'.repeat(EvidenceLimits.stringLength + 1)] });
    expect(error.issues).toEqual([{ path: 'evidence.parts.1', message: 'must be at most 512 characters' }]);
  });

  it('an array over 32 items is refused', () => {
    const error = validationError({ ids: Array.from({ length: EvidenceLimits.arrayItems + 1 }, (_, i) => i) });
    expect(error.issues).toEqual([{ path: 'evidence.ids', message: 'must have at most 32 items' }]);
  });

  it.each([
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['undefined', undefined],
    ['a bigint', 10n],
    ['a Date', new Date(0)],
    ['a nested array', [[1]]],
  ])('%s as a value is refused', (_name, value) => {
    expect(validationError({ value }).issues.map((issue) => issue.path)).toEqual(
      Array.isArray(value) ? ['evidence.value.0'] : ['evidence.value'],
    );
  });

  it.each([
    ['an array', [1, 2]],
    ['null', null],
    ['a string', 's3://bucket/key'],
    ['a Date', new Date(0)],
  ])('%s instead of an object is refused', (_name, value) => {
    expect(validationError(value).issues).toEqual([{ path: 'evidence', message: 'must be a flat object of evidence fields' }]);
  });

  it.each([
    ['starts with a digit', '1field'],
    ['contains a space', 'provider status'],
    ['is longer than 64 characters', `k${'e'.repeat(EvidenceLimits.keyLength)}`],
    ['is empty', ''],
  ])('a key that %s is refused and reported by position, not by name', (_name, key) => {
    const error = validationError({ ok: 1, [key]: 1 });
    expect(error.issues).toEqual([{ path: 'evidence.<key 1>', message: expect.stringContaining('key must start with a letter') }]);
    if (key !== '') expect(rendered(error)).not.toContain(key);
  });

  it('an invalid key that holds a credential is not echoed', () => {
    const key = `Bearer ${filler(32)}`;
    const error = validationError({ [key]: 'x' });
    expect(error.issues.map((issue) => issue.path)).toEqual(['evidence.<key 0>']);
    expect(rendered(error)).not.toContain(filler(32));
  });

  it('the schema alone checks the shape and infers the Evidence type', () => {
    expect(EvidenceSchema.safeParse({ a: { b: 1 } }).success).toBe(false);
    // The shape check alone does not scan for secrets: parseEvidence is the gate before a write.
    expect(EvidenceSchema.safeParse({ a: 'password=x' }).success).toBe(true);
  });
});
