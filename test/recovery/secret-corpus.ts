import { createHash, generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import type { Evidence } from '../../lib/recovery/evidence.js';
import type { SecretKind } from '../../lib/recovery/secret-detector.js';

/**
 * The evidence secret detector's corpus: every known way around it, each a named evidence object that must be
 * refused, and the reference and digest forms real evidence records, which must pass.
 *
 * Credential-shaped fixtures are assembled at run time so that no token-shaped literal sits in the source (secret
 * scanners and push protection would flag them). None of them is a real credential; the key pairs are generated
 * per run and never leave the process.
 */

const filler = (length: number, alphabet = 'Ab3Cd4Ef5Gh6Jk7Mn8Pq9Rs2Tu'): string =>
  Array.from({ length }, (_, i) => alphabet[i % alphabet.length]).join('');
const upper = (length: number): string => filler(length, 'QWERTYUPASDFGHJKLZXCVBNM234567');
const b64 = (text: string): string => Buffer.from(text).toString('base64');
const b64url = (text: string): string => Buffer.from(text).toString('base64url');
const hex = (text: string): string => Buffer.from(text).toString('hex');
const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');

/** A PEM body (the base64 lines between the armour) of a freshly generated key. */
function pemBody(type: 'ec' | 'rsa' | 'ed25519'): string[] {
  const { privateKey } =
    type === 'rsa'
      ? generateKeyPairSync('rsa', { modulusLength: 1024 })
      : type === 'ec'
        ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
        : generateKeyPairSync('ed25519');
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  return pem.split('\n').filter((line) => line !== '' && !line.startsWith('-----'));
}

const githubToken = `ghp_${filler(36)}`;
const awsKeyId = `AKIA${upper(16)}`;
const awsSecretAccessKey = filler(40, 'wJalrXUtnFEMIK7MDENGbPxRfiCY0123456789+/');
const password = 'hunter2-Tr0ub4dor';
const jwtPayload = b64url('{"sub":"owner-1","scope":"ops:read ops:write"}');
/** A JWS whose header does not begin `{"`, so its base64url does not begin `eyJ`. */
const jwtWithoutEyJ = [b64url(' { "alg" : "HS256", "typ" : "JWT" }'), jwtPayload, filler(43)].join('.');
const jwtHeaderKidFirst = [b64url('{ "kid":"k1","alg":"RS256"}'), jwtPayload, filler(86)].join('.');
const ecBody = pemBody('ec');
const rsaBody = pemBody('rsa');
const ed25519Body = pemBody('ed25519');

/** One way to smuggle a secret into evidence: `evidence` must be refused, and `secret` must never be printed. */
export interface RefusedCase {
  readonly name: string;
  /** The kind the detector must report: proves the case is caught by the rule meant for it, not by accident. */
  readonly kind: SecretKind;
  readonly evidence: Evidence;
  /** The secret itself, for "never stored, never printed" checks. */
  readonly secret: string;
}

const keyed = (name: string, key: string): RefusedCase => ({ name, kind: 'secret_key_name', evidence: { [key]: password }, secret: password });
const valued = (name: string, kind: SecretKind, value: string, secret: string = value): RefusedCase => ({ name, kind, evidence: { providerResponse: value }, secret });
const itemised = (name: string, kind: SecretKind, items: string[]): RefusedCase => ({ name, kind, evidence: { parts: items }, secret: items.join('') });

/** Every bypass the detector must close. Each is refused with `SecretInEvidenceError`, naming no part of `secret`. */
export const MUST_REFUSE: readonly RefusedCase[] = [
  // Key names: cased, split, camel-cased, or a name the old list did not know.
  keyed('key passWord (camel split of one word)', 'passWord'),
  keyed('key pass_word (underscore split)', 'pass_word'),
  keyed('key pass-word (hyphen split)', 'pass-word'),
  keyed('key pass.word (dot split)', 'pass.word'),
  keyed('key PASS_WORD (upper case)', 'PASS_WORD'),
  keyed('key toKen (odd casing)', 'toKen'),
  keyed('key TOKEN', 'TOKEN'),
  keyed('key accessKey', 'accessKey'),
  keyed('key bearer', 'bearer'),
  keyed('key jwt', 'jwt'),
  keyed('key privKey', 'privKey'),
  keyed('key signingKey', 'signingKey'),
  keyed('key authorization', 'authorization'),
  // Percent-encoded (RFC 3986 §2.1): decoded and rescanned.
  valued('percent-encoded assignment password%3D…', 'credential_assignment', `password%3D${password}`, password),
  keyed('key githubToken (compound)', 'githubToken'),
  keyed('key dbPassword (compound)', 'dbPassword'),
  keyed('key client_secret', 'client_secret'),
  keyed('key otpCode', 'otpCode'),
  keyed('key pin', 'pin'),
  keyed('key x-auth', 'x-auth'),
  keyed('key passphrase', 'passphrase'),
  // Assignments inside values, however the name is spelt.
  valued('PASS WORD = (name split by a space)', 'credential_assignment', `PASS WORD = ${password}`, password),
  valued('api key: (name split by a space)', 'credential_assignment', `api key: ${filler(24)}`, filler(24)),
  valued('"pass_word": in JSON text', 'credential_assignment', `{"user":"svc","pass_word":"${password}"}`, password),
  valued('passWord= in a query string', 'credential_assignment', `https://api.example.com/hook?passWord=${password}`, password),
  // Structure: JWT without eyJ, PEM without its armour.
  valued('a JWT whose header does not start eyJ', 'jwt', jwtWithoutEyJ),
  valued('a JWT whose header starts with kid', 'jwt', jwtHeaderKidFirst),
  valued('an EC private key body without BEGIN/END lines', 'pem_body', ecBody.join('\n')),
  valued('an Ed25519 private key body without BEGIN/END lines', 'pem_body', ed25519Body.join('')),
  valued('a PEM END line without its BEGIN', 'pem_block', `${ecBody.join('\n')}\n-----END PRIVATE KEY-----`),
  itemised('an RSA key body, one line per array item', 'pem_body', rsaBody),
  // A key split across array items.
  itemised('an AWS access key id split across two items', 'aws_access_key_id', [awsKeyId.slice(0, 4), awsKeyId.slice(4)]),
  itemised('a GitHub token split across three items', 'github_token', [githubToken.slice(0, 3), githubToken.slice(3, 10), githubToken.slice(10)]),
  itemised('a PEM BEGIN line split across items', 'pem_block', ['-----BEG', 'IN PRIVATE KEY-----']),
  itemised('password= split across items', 'credential_assignment', ['pass', 'word=', password]),
  // Wrapped.
  valued('base64 of password=…', 'credential_assignment', b64(`password=${password}`), password),
  valued('base64url of a GitHub token', 'github_token', b64url(githubToken), githubToken),
  valued('hex of an AWS access key id', 'aws_access_key_id', hex(awsKeyId), awsKeyId),
  valued('base64 of hex of a GitHub token (two levels)', 'github_token', b64(hex(githubToken)), githubToken),
  valued('base64 of a JWT', 'jwt', b64(jwtWithoutEyJ), jwtWithoutEyJ),
  valued('base64 inside text', 'credential_assignment', `payload ${b64(`token=${filler(20)}`)} end`, filler(20)),
  // Look-alikes and invisible characters.
  valued('a GitHub token with a Cyrillic р', 'github_token', `ghр_${filler(36)}`, filler(36)),
  valued('password= with Cyrillic а and о', 'credential_assignment', `раsswоrd=${password}`, password),
  valued('an AWS access key id with Cyrillic А and К', 'aws_access_key_id', `АКIA${upper(16)}`, upper(16)),
  valued('Bearer with Greek Β', 'bearer_token', `Βearer ${filler(32)}`, filler(32)),
  valued('a GitHub token with a zero-width space', 'github_token', `gh\u200Bp_${filler(36)}`, filler(36)),
  valued('password= with a zero-width joiner', 'credential_assignment', `pass\u200Dword=${password}`, password),
  valued('an AWS access key id with a BOM inside', 'aws_access_key_id', `AK\uFEFFIA${upper(16)}`, upper(16)),
  valued('sk- with a soft hyphen', 'openai_api_key', `sk\u00AD-${filler(40)}`, filler(40)),
  valued('a JWT with word joiners', 'jwt', jwtWithoutEyJ.replace('.', '\u2060.\u2060'), jwtPayload),
  valued('password with a full-width =', 'credential_assignment', `password＝${password}`, password),
  valued('full-width letters ｐａｓｓｗｏｒｄ:', 'credential_assignment', `ｐａｓｓｗｏｒｄ: ${password}`, password),
  // Short variants of known prefixes.
  valued('a short sk- key', 'openai_api_key', 'sk-a1b2c3d4e5'),
  valued('a short ghp_ token', 'github_token', `ghp_${filler(10)}`),
  valued('a short github_pat_', 'github_token', `github_pat_${filler(12)}`),
  valued('a short AKIA id (12 more)', 'aws_access_key_id', `AKIA${upper(12)}`),
  valued('an ASIA id', 'aws_access_key_id', `ASIA${upper(16)}`),
  valued('a Slack bot token', 'slack_token', `xoxb-1-${filler(10)}`),
  valued('a Stripe webhook secret', 'stripe_secret_key', `whsec_${filler(32)}`),
  valued('a GitLab token', 'vendor_token', `glpat-${filler(20)}`),
  // Shapeless but random-looking.
  valued('an AWS secret access key under a neutral name', 'high_entropy_token', awsSecretAccessKey),
  valued('a 32-character random token', 'high_entropy_token', filler(32, 'k7QxP2mZ9vB4nL8rT1wY6cH3jF5dS0gA')),
  valued('a URL with user:password@', 'url_credentials', `https://svc:${password}@api.example.com/v1`, password),
  valued('a presigned-URL signature in the query', 'high_entropy_token', `https://bucket.s3.amazonaws.com/key?X-Amz-Signature=${filler(43)}`, filler(43)),
];

/** Evidence as the product and the example modules record it, and every declared reference or digest form. */
export const MUST_PASS: readonly { readonly name: string; readonly evidence: Evidence }[] = [
  {
    name: 'result objects (lib/results): etag, bytes, body digest, object ref, head status',
    evidence: {
      etag: sha256Hex('a').slice(0, 32),
      bytes: 52_428_800,
      bodyDigest: `sha256:${sha256Hex('body')}`,
      objectRef: `s3://durable-ops-results/owners/o-1/${randomUUID()}.json`,
      headStatus: 'HTTP_200',
      deleted: true,
      replacedByOtherWriter: false,
    },
  },
  {
    name: 'DLQ redrive (lib/queue): SQS message ids, body digest, MD5 of body, checkpoint seq',
    evidence: { dlqMessageId: randomUUID(), sentMessageId: randomUUID(), bodyDigest: `sha256:${sha256Hex('m')}`, md5OfBody: sha256Hex('m').slice(0, 32), checkpointSeq: 2 },
  },
  {
    name: 'webhook delivery example: plan, precondition, result and failure reason',
    evidence: {
      check: 'ask_receiver',
      deliveryId: randomUUID(),
      origin: 'https://receiver.example.com',
      target: `sha256:${sha256Hex('https://receiver.example.com/hook')}`,
      try: 1,
      attempt: 2,
      httpStatus: 200,
      resultCode: 'HTTP_200',
      reason: 'TimeoutError',
    },
  },
  {
    name: 'README lifecycle example: ETag, content digest, bytes, undo plan',
    evidence: { etag: `"${sha256Hex('x').slice(0, 32)}"`, contentDigest: `sha256:${sha256Hex('c')}`, bytes: 42, undo: 'delete_object', objectExisted: false },
  },
  {
    name: 'declared digest forms: sha512 hex, SRI base64, sha1, multipart ETag',
    evidence: {
      sha512: `sha512:${createHash('sha512').update('s').digest('hex')}`,
      integrity: `sha256-${createHash('sha256').update('s').digest('base64')}`,
      integrity512: `sha512-${createHash('sha512').update('s').digest('base64')}`,
      commit: createHash('sha1').update('c').digest('hex'),
      multipartEtag: `"${sha256Hex('p').slice(0, 32)}-12"`,
      weakEtag: `W/"${sha256Hex('w').slice(0, 32)}"`,
    },
  },
  {
    name: 'references: ARNs (one names a secret), URLs without credentials, object keys',
    evidence: {
      configRef: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:db-credentials-AbCdEf',
      roleRef: 'arn:aws:iam::123456789012:role/durable-ops-worker',
      queueRef: 'https://sqs.eu-west-1.amazonaws.com/123456789012/durable-ops-wakeups',
      objectKeys: ['s3://bucket/a', 's3://bucket/b', `s3://bucket/${randomUUID()}/${sha256Hex('k')}.json`, 42, false, null],
    },
  },
  {
    name: 'provider request ids, timestamps and numeric ids',
    evidence: {
      awsRequestId: randomUUID(),
      s3RequestId: '4442587FB7D0A2F9',
      providerRequestId: 'req_01HZX3Q7W8M4T2V9K6N5B1C0DE',
      completionId: `chatcmpl-${filler(29, 'a1B2c3D4e5F6g7H8')}`,
      stripeEvent: 'evt_1NG8Du2eZvKYlo2CUI79vXWy',
      observedAt: '2026-12-02T16:20:15.123Z',
      day: '2026-12-02',
      accountNumber: '123456789012',
      largeId: 9_007_199_254_740_991,
    },
  },
  {
    name: 'model usage counts and neutral names that contain short secret words',
    evidence: { promptTokens: 1200, completion_tokens: 87, totalTokenCount: 1287, maxTokens: 4096, author: 'ops', shipping: 3, footprint: 2, mapping: 'v2', keyRef: 'kms:alias/recovery', wwwAuthenticate: 'Bearer error="invalid_token"' },
  },
  {
    name: 'provider messages that mention credentials without holding one',
    evidence: {
      providerMessage: 'Basic auth not supported',
      errorText: 'error: invalid token',
      note: 'the session expired; the password was not changed',
      hostname: 'api.eu-west-1.amazonaws.com',
      version: 'v1.2.3',
      encodedNote: b64('hello world, nothing to see'),
      ids: ['req_01HZX3Q7W8M4T2V9K6N5B1C0DE', 'req_01HZX3Q7W8M4T2V9K6N5B1C0DF', 'req_01HZX3Q7W8M4T2V9K6N5B1C0DG'],
    },
  },
];

/** Random allowed digests and ids for the property test: each call gives a fresh one of every form. */
export function randomAllowedEvidence(): Evidence {
  const bytes = randomBytes(64);
  return {
    contentDigest: `sha256:${createHash('sha256').update(bytes).digest('hex')}`,
    sha512: `sha512:${createHash('sha512').update(bytes).digest('hex')}`,
    integrity: `sha384-${createHash('sha384').update(bytes).digest('base64')}`,
    etag: `"${createHash('md5').update(bytes).digest('hex')}"`,
    bareEtag: createHash('md5').update(bytes).digest('hex'),
    messageId: randomUUID(),
    objectRef: `s3://bucket/${randomUUID()}/${bytes.subarray(0, 8).toString('hex')}`,
    numericId: bytes.readUInt32BE(0) * 1000 + bytes.readUInt16BE(4),
    numericIdText: String(bytes.readBigUInt64BE(8)),
    observedAt: new Date(bytes.readUInt32BE(16) * 1000).toISOString(),
  };
}
