import fc from 'fast-check';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capacityPolicy } from '../../lib/capacity/capacity-policy.js';
import { createJob } from '../../lib/jobs/jobs.js';
import { isPublicRequest } from '../../lib/http/api-handler.js';
import { ProblemSchema } from '../../lib/http/problem-details.js';
import { DEV_TOKEN_AUDIENCE, DEV_TOKEN_ISSUER, signDevToken } from '../../lib/local/dev-token.js';
import { LOCAL_MAX_BODY_BYTES, startLocalHttpServer, type LocalHttpServer } from '../../lib/local/local-http-server.js';
import { silentLogger } from '../../lib/logger.js';
import { failOperation } from '../../lib/operations/lease/lease-operations.js';
import { OwnerScope } from '../../lib/operations/scopes.js';
import { updateOwnSettings } from '../../lib/owners/owner-settings.js';
import { createApiTestApp, type ApiTestApp } from '../http/api-test-app.js';
import { lambdaContext, parseResponse, type ParsedResponse } from '../support/api-events.js';
import { sendRaw } from '../support/raw-http.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';
import { applicationTables, emptyTables, snapshotDatabase } from './db-snapshot.js';
import { assertsCoverage, FUZZ_TEST_TIMEOUT_MS, fuzzParameters } from './fuzz-settings.js';
import { allowedStatuses, JSON_CONTENT_TYPES, OTHER_CONTENT_TYPES, EDGE_OTHER_OWNER, EDGE_OWNER, EDGE_UNENTITLED_OWNER, edgeEvent, edgeRequestArb, resolvePath, ROUTE_SPECS, type EdgeRequest } from './http-edge-requests.js';

const SECRET = 'fuzz-dev-secret-of-at-least-32-characters';

/** Runs of the main property per dialect (each run: fresh fixtures, then up to 6 requests). */
const RUNS = 120;

/** The tables every migration set must have: the "nothing written" snapshots must cover at least these. */
const KNOWN_TABLES = [
  'ai_workspace_notes',
  'capacity_slots',
  'owner_capacity',
  'jobs',
  'operation_key_aliases',
  'operation_notifications',
  'operations',
  'owner_settings',
  'recovery_checkpoints',
  'recovery_operations',
];

/** What every answer must be: an allowed status, never a 5xx; problem+json for a 4xx, JSON for a 2xx. */
function checkAnswer(response: ParsedResponse, allowed: readonly number[], label: string): void {
  expect(response.status, `${label}: never a 5xx`).toBeLessThan(500);
  expect(allowed, label).toContain(response.status);
  if (response.status >= 400) {
    expect(response.headers['content-type'], label).toBe('application/problem+json');
    expect(ProblemSchema.parse(response.json).status, label).toBe(response.status);
  } else {
    expect(response.headers['content-type'], label).toBe('application/json');
  }
}

/**
 * An `Authorization` header the local stand-in for the JWT authorizer must refuse: absent, malformed, or a token signed
 * with another secret, for another issuer or audience, or expired. Data only, so a counterexample prints readably.
 */
type RefusedAuthorization =
  | { readonly kind: 'absent' }
  | { readonly kind: 'header'; readonly value: string }
  | { readonly kind: 'other-secret'; readonly secret: string }
  | { readonly kind: 'claims'; readonly iss: string; readonly aud: string; readonly expired: boolean };

const jwtPart = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

const refusedAuthorizationArb: fc.Arbitrary<RefusedAuthorization> = fc.oneof(
  fc.constant({ kind: 'absent' as const }),
  fc.constantFrom('', 'Bearer', 'Bearer ', 'Basic dXNlcjpwYXNz', 'Bearer a.b.c', 'Bearer ..', 'Token abc').map((value) => ({ kind: 'header' as const, value })),
  fc.stringMatching(/^[\x20-\x7e]{0,80}$/).map((value) => ({ kind: 'header' as const, value: `Bearer ${value}` })),
  fc
    .tuple(fc.jsonValue({ maxDepth: 2 }), fc.jsonValue({ maxDepth: 2 }), fc.base64String({ maxLength: 40 }))
    .map(([header, payload, signature]) => ({ kind: 'header' as const, value: `Bearer ${jwtPart(header)}.${jwtPart(payload)}.${signature.replace(/[+/=]/g, '')}` })),
  fc.string({ minLength: 1, maxLength: 40 }).map((secret) => ({ kind: 'other-secret' as const, secret: `${secret}-another-secret` })),
  fc
    .record({ kind: fc.constant('claims' as const), iss: fc.constantFrom(DEV_TOKEN_ISSUER, 'someone-else'), aud: fc.constantFrom(DEV_TOKEN_AUDIENCE, 'other-api'), expired: fc.boolean() })
    .filter(({ iss, aud, expired }) => expired || iss !== DEV_TOKEN_ISSUER || aud !== DEV_TOKEN_AUDIENCE),
);

/** The header value of `refused` (signing its tokens now). */
async function authorizationHeader(refused: RefusedAuthorization): Promise<string | undefined> {
  switch (refused.kind) {
    case 'absent':
      return undefined;
    case 'header':
      return refused.value;
    case 'other-secret':
      return `Bearer ${await signDevToken(EDGE_OWNER, refused.secret)}`;
    case 'claims': {
      const now = Math.floor(Date.now() / 1000);
      const claims = { sub: EDGE_OWNER, iss: refused.iss, aud: refused.aud, iat: now - 7200, exp: refused.expired ? now - 3600 : now + 3600 };
      return `Bearer ${await new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(SECRET))}`;
    }
  }
}

/** A `Host` the local server must answer (a loopback name; `{port}` is its port) or refuse with 421 (`foreign`). */
const hostArb = fc.oneof(
  fc.constantFrom('localhost', 'localhost:{port}', '127.0.0.1:{port}', '[::1]:{port}', 'app.localhost:{port}', 'LocalHost').map((host) => ({ host, foreign: false })),
  fc
    .oneof(
      fc.constantFrom('rebind.attacker.example', 'evil.example:80', '127.0.0.1.nip.io:{port}', 'localhost.evil.example', '[::2]:{port}', '10.0.0.7', '0.0.0.0:{port}'),
      fc.domain(),
    )
    .filter((host) => !/(^|\.)localhost$/i.test(host))
    .map((host) => ({ host, foreign: true })),
);

/** Body sizes in bytes around the local server's cap, and anywhere up to three times it. */
const bodySizeArb = fc.oneof(
  fc.constantFrom(0, 2, LOCAL_MAX_BODY_BYTES - 1, LOCAL_MAX_BODY_BYTES, LOCAL_MAX_BODY_BYTES + 1, 2 * LOCAL_MAX_BODY_BYTES),
  fc.integer({ min: 0, max: 3 * LOCAL_MAX_BODY_BYTES }),
);

/** A JSON object of exactly `size` bytes (at least 2): `{}` or one padded string member. */
function jsonOfSize(size: number): Buffer {
  return Buffer.from(size < 10 ? '{}'.padEnd(size, ' ') : `{"pad":"${'x'.repeat(size - 10)}"}`, 'utf8');
}

describe.each(DIALECTS)('the API edge under random requests on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  let tables: string[];
  let server: LocalHttpServer;

  beforeAll(async () => {
    if (skip) return;
    // Small pools, so random admissions also reach 429.
    app = await createApiTestApp(dialect, { capacity: capacityPolicy({ perOwner: 2, global: 6, retryAfterSeconds: 7 }) });
    tables = await applicationTables(app.db.store);
    expect(tables).toEqual(expect.arrayContaining(KNOWN_TABLES));
    server = await startLocalHttpServer({ port: 0, handler: app.handler, devJwtSecret: SECRET, logger: silentLogger });
  });
  afterAll(async () => {
    await server?.close();
    await app?.drop();
  });

  /** Empties every table and builds the run's fixtures; returns the ids paths may name (own and another owner's). */
  async function freshFixtures(): Promise<string[]> {
    await emptyTables(app.db.store, tables);
    const admitted = await app.call({
      method: 'POST',
      path: '/api/operations',
      owner: EDGE_OWNER,
      headers: { 'idempotency-key': 'edge-key-1' },
      body: { taskType: 'demo.wait', subject: { type: 'doc', id: 'd1' }, params: { durationMs: 10 } },
    });
    const theirs = await app.call({
      method: 'POST',
      path: '/api/operations',
      owner: EDGE_OTHER_OWNER,
      headers: { 'idempotency-key': 'edge-key-1' },
      body: { taskType: 'demo.wait', subject: { type: 'doc', id: 'd1' }, params: { durationMs: 10 } },
    });
    const running = await app.admitAndClaim(EDGE_OWNER, 'edge-key-2');
    const failed = await app.admitAndClaim(EDGE_OWNER, 'edge-key-3');
    await failOperation(failed.scope, failed.claim, { kind: 'permanent', message: 'fixture' }, 0, 0);
    await updateOwnSettings(new OwnerScope(app.db.store, EDGE_UNENTITLED_OWNER), { aiEnabled: false });
    const job = { title: 'Engineer', company: 'Acme', description: 'Build things.' };
    const ownJob = await createJob(new OwnerScope(app.db.store, EDGE_OWNER), job);
    const theirJob = await createJob(new OwnerScope(app.db.store, EDGE_OTHER_OWNER), job);
    return [admitted.json.id, running.operationId, failed.operationId, theirs.json.id, ownJob.id, theirJob.id];
  }

  it.skipIf(skip)(
    'every answer is a 2xx or 4xx that docs/design.md §7 allows for the route, every 4xx is problem+json, and no 4xx writes a row',
    async () => {
      const seen = new Set<number>();
      let runs = 0;
      const parameters = fuzzParameters<[EdgeRequest[]]>(RUNS);
      await fc.assert(
        fc.asyncProperty(fc.array(edgeRequestArb, { minLength: 1, maxLength: 6 }), async (requests: EdgeRequest[]) => {
          runs++;
          const knownIds = await freshFixtures();
          for (const request of requests) {
            const path = resolvePath(request, knownIds);
            const before = await snapshotDatabase(app.db.store, tables);
            const response = parseResponse(await app.handler(edgeEvent(request, path), lambdaContext()));
            const label = `${request.target.method} ${path} as ${JSON.stringify(request.caller)} → ${response.status} ${response.text.slice(0, 300)}`;
            seen.add(response.status);
            const sent = { body: request.body, contentType: request.headers['content-type'] };
            checkAnswer(response, allowedStatuses(request.target.method, path, request.caller, sent), label);
            // No body, success or problem, echoes the Idempotency-Key (docs/design.md §7); short keys could match by chance.
            const key = request.headers['idempotency-key'];
            if (key !== undefined && key.length >= 12) expect(response.text, `${label}: echoes the key`).not.toContain(JSON.stringify(key).slice(1, -1));
            if (response.status >= 400) expect(await snapshotDatabase(app.db.store, tables), `${label}: a 4xx wrote nothing`).toEqual(before);
          }
        }),
        parameters,
      );
      // The generator must keep reaching the success and refusal branches, not only the route misses.
      if (assertsCoverage(parameters, RUNS, runs)) expect([...seen]).toEqual(expect.arrayContaining([200, 201, 202, 400, 401, 404, 405, 409, 415]));
    },
    FUZZ_TEST_TIMEOUT_MS,
  );

  it.skipIf(skip)(
    'through the local server, a missing or invalid Authorization is a 401 problem+json on every non-public route, and writes nothing',
    async () => {
      const methodArb = fc.constantFrom('GET', 'POST', 'PATCH', 'PUT', 'DELETE');
      const pathArb = fc.oneof(
        fc.constantFrom(...ROUTE_SPECS.map((spec) => spec.template.replace(/\{[^/]+\}/g, '00000000-0000-4000-8000-000000000000'))),
        // no `.` / `..` segments: fetch would resolve them (RFC 3986 §5.2.4) before the request leaves
        fc.array(fc.stringMatching(/^[A-Za-z0-9._~-]{1,12}$/).filter((segment) => !/^\.+$/.test(segment)), { maxLength: 3 }).map((segments) => `/api/${segments.join('/')}`),
      );
      await fc.assert(
        fc.asyncProperty(methodArb, pathArb, refusedAuthorizationArb, fc.option(fc.jsonValue({ maxDepth: 2 })), async (method, path, authorization, body) => {
          fc.pre(!isPublicRequest(method, path));
          const header = await authorizationHeader(authorization);
          const before = await snapshotDatabase(app.db.store, tables);
          const sendsBody = body !== null && method !== 'GET';
          const answer = await fetch(`${server.url}${path}`, {
            method,
            headers: { ...(header === undefined ? {} : { authorization: header }), 'content-type': 'application/json', 'idempotency-key': 'edge-key-9' },
            ...(sendsBody ? { body: JSON.stringify(body) } : {}),
          });
          const text = await answer.text();
          const label = `${method} ${path} with ${JSON.stringify(header)} → ${answer.status} ${text.slice(0, 200)}`;
          expect(answer.status, label).toBe(401);
          expect(answer.headers.get('www-authenticate'), label).toBe('Bearer');
          checkAnswer({ status: answer.status, headers: { 'content-type': answer.headers.get('content-type') ?? '' }, text, json: JSON.parse(text) }, [401], label);
          expect(await snapshotDatabase(app.db.store, tables), `${label}: nothing written`).toEqual(before);
        }),
        fuzzParameters(30),
      );
    },
    FUZZ_TEST_TIMEOUT_MS,
  );

  it.skipIf(skip)(
    'through the local server, a foreign Host is a 421, a body over the cap a 413 (declared or chunked), a non-JSON body a 415, a body where none is taken a 400; never a 5xx, nothing written',
    async () => {
      const token = await signDevToken(EDGE_OWNER, SECRET);
      const targets = ROUTE_SPECS.filter((spec) => spec.access === undefined && spec.method !== 'GET').map((spec) => ({
        method: spec.method,
        path: spec.template.replace(/\{[^/]+\}/g, '00000000-0000-4000-8000-000000000000'),
      }));
      const contentTypeArb = fc.option(fc.constantFrom(...JSON_CONTENT_TYPES, ...OTHER_CONTENT_TYPES), { nil: undefined, freq: 5 });
      const seen = new Set<number>();
      let runs = 0;
      const parameters = fuzzParameters<[{ method: string; path: string }, { host: string; foreign: boolean }, number, boolean, string | undefined]>(40);
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...targets), hostArb, bodySizeArb, fc.boolean(), contentTypeArb, async (target, host, size, chunked, contentType) => {
          runs++;
          await freshFixtures();
          const before = await snapshotDatabase(app.db.store, tables);
          const body = size < 2 ? Buffer.alloc(0) : jsonOfSize(size);
          const headers = {
            host: host.host.replace('{port}', String(server.port)),
            authorization: `Bearer ${token}`,
            'idempotency-key': 'edge-key-local',
            ...(contentType === undefined ? {} : { 'content-type': contentType }),
          };
          const chunks = chunked ? Array.from({ length: Math.ceil(body.byteLength / 65_536) }, (_, i) => body.subarray(i * 65_536, (i + 1) * 65_536)) : body;
          const answer = await sendRaw(server.url, { method: target.method, path: target.path, headers, body: chunks });
          const label = `${target.method} ${target.path} Host ${headers.host}, ${body.byteLength} bytes ${chunked ? 'chunked' : 'with Content-Length'}, ${contentType} → ${answer.status} ${answer.text.slice(0, 200)}`;
          const sent = { body: body.byteLength === 0 ? undefined : 'a body', contentType };
          const allowed = host.foreign ? [421] : body.byteLength > LOCAL_MAX_BODY_BYTES ? [413] : allowedStatuses(target.method, target.path, { kind: 'owner' }, sent);
          seen.add(answer.status);
          checkAnswer({ status: answer.status, headers: { 'content-type': String(answer.headers['content-type']) }, text: answer.text, json: JSON.parse(answer.text || 'null') }, allowed, label);
          if (answer.status >= 400) expect(await snapshotDatabase(app.db.store, tables), `${label}: nothing written`).toEqual(before);
        }),
        parameters,
      );
      if (assertsCoverage(parameters, 40, runs)) expect([...seen]).toEqual(expect.arrayContaining([400, 413, 415, 421]));
    },
    FUZZ_TEST_TIMEOUT_MS,
  );
});
