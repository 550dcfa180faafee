import fc from 'fast-check';
import type { ApiEvent } from '../../lib/http/api-handler.js';
import { DEV_OPERATOR_GROUP, DEV_OPERATOR_GROUP_CLAIM } from '../../lib/local/dev-operator.js';
import { apiEvent } from '../support/api-events.js';

/**
 * Random requests for the owner API (docs/design.md §7) and the statuses the design allows each of them. Ids in paths are
 * either real ones (resolved per run: `{ known: n }`) or garbage, so both the found and the not-found branches run.
 */

/** A route as docs/design.md §7 (and the README table) lists it, with every status it may answer to an authenticated caller. */
interface RouteSpec {
  readonly method: string;
  readonly template: string;
  readonly statuses: readonly number[];
  readonly access?: 'public' | 'operator';
  /** Whether it takes a JSON body (its route doc declares one); every other route answers a body with 400. */
  readonly body?: true;
}

/** docs/design.md §7 and README "HTTP API": route → allowed statuses (401 is added for callers without a verified `sub`). */
export const ROUTE_SPECS: readonly RouteSpec[] = [
  { method: 'POST', template: '/api/operations', statuses: [200, 202, 400, 403, 422, 429], body: true },
  { method: 'GET', template: '/api/operations', statuses: [200, 400] },
  { method: 'GET', template: '/api/operations/{id}', statuses: [200, 404] },
  { method: 'POST', template: '/api/operations/{id}/cancel', statuses: [200, 404, 409] },
  { method: 'POST', template: '/api/operations/{id}/retry', statuses: [202, 403, 404, 409, 429] },
  { method: 'GET', template: '/api/notifications', statuses: [200, 400] },
  { method: 'GET', template: '/api/me/settings', statuses: [200] },
  { method: 'PATCH', template: '/api/me/settings', statuses: [200, 400], body: true },
  { method: 'POST', template: '/api/jobs', statuses: [201, 400], body: true },
  { method: 'GET', template: '/api/jobs/{id}', statuses: [200, 404] },
  { method: 'POST', template: '/api/jobs/{id}/strategy-snapshot', statuses: [200, 202, 400, 403, 404, 422, 429] },
  { method: 'GET', template: '/api/jobs/{id}/strategy-snapshot', statuses: [200, 404] },
  { method: 'GET', template: '/api/ops/recovery', statuses: [200, 400], access: 'operator' },
  { method: 'GET', template: '/api/openapi.json', statuses: [200], access: 'public' },
];

const patternOf = (template: string) => new RegExp(`^${template.replace(/\./g, '\\.').replace(/\{[^/]+\}/g, '[^/]+')}/?$`);
const SPEC_PATTERNS = ROUTE_SPECS.map((spec) => ({ spec, pattern: patternOf(spec.template) }));

/** Who the caller is, as the JWT authorizer would hand it over (or a broken event that no authorizer would send). */
export type Caller =
  | { readonly kind: 'owner' | 'other' | 'operator' | 'unentitled' }
  | { readonly kind: 'none' }
  | { readonly kind: 'sub'; readonly sub: unknown };

/** `Content-Type` values that name JSON (RFC 6839 §3.1 `+json` included; a `charset` only as utf-8, RFC 8259 §8.1). */
export const JSON_CONTENT_TYPES = ['application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON;charset="UTF-8"', 'application/problem+json', 'application/merge-patch+json; v=1'];

/** `Content-Type` values that do not: curl's form default, text, a JSON look-alike, another charset, a wildcard, blank. */
export const OTHER_CONTENT_TYPES = ['text/plain', 'text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', 'text/json', 'application/jsonp', 'application/json; charset=iso-8859-1', '*/*', ''];

/** What the request carried that the body rules look at: its body and its `Content-Type` (undefined when absent). */
export interface SentBody {
  readonly body?: string | undefined;
  readonly contentType?: string | undefined;
}

/**
 * The statuses the body rules leave for a routed request to `spec` (README "HTTP API"): a non-empty body on a route that
 * takes none is exactly a 400; on a route that takes one it is exactly a 415 when its `Content-Type` is absent or one of
 * {@link OTHER_CONTENT_TYPES}, the route's own statuses for one of {@link JSON_CONTENT_TYPES}, and either for anything
 * else the generator made up.
 */
function bodyStatuses(spec: RouteSpec, sent: SentBody): readonly number[] {
  if (sent.body === undefined || sent.body === '') return spec.statuses;
  if (!spec.body) return [400];
  if (sent.contentType === undefined || OTHER_CONTENT_TYPES.includes(sent.contentType)) return [415];
  return JSON_CONTENT_TYPES.includes(sent.contentType) ? spec.statuses : [415, ...spec.statuses];
}

/** The statuses docs/design.md §7 allows for `method` + `path` from `caller`, sending `sent`. */
export function allowedStatuses(method: string, path: string, caller: Caller, sent: SentBody = {}): readonly number[] {
  const rawPath = path.split('?')[0] ?? '';
  const matching = SPEC_PATTERNS.filter(({ pattern }) => pattern.test(rawPath)).map(({ spec }) => spec);
  const exact = matching.find((spec) => spec.method === method);
  if (exact?.access === 'public') return bodyStatuses(exact, sent);
  const verified = caller.kind !== 'none' && caller.kind !== 'sub';
  if (!verified) return [401];
  if (matching.some((spec) => spec.access === 'operator') && caller.kind !== 'operator') return [404];
  if (exact) return bodyStatuses(exact, sent);
  return matching.length > 0 ? [405] : [404];
}

/** One request of the fuzzer. */
export interface EdgeRequest {
  /** Method and path; `{known:n}` placeholders in the path are resolved by {@link resolvePath}. */
  readonly target: { readonly method: string; readonly path: PathPart[] };
  readonly query: string;
  readonly caller: Caller;
  readonly headers: Record<string, string>;
  readonly body: string | undefined;
  readonly base64: boolean;
}

/** A literal piece of a path, or the n-th known id of the run. */
type PathPart = string | { readonly known: number };

const segmentArb = fc.oneof(
  fc.string({ minLength: 1, maxLength: 12 }).map((s) => s.replace(/[/?#]/g, '_') || '_'),
  fc.constantFrom('..', '.', '%2F', '%00', 'null', 'undefined', '00000000-0000-0000-0000-000000000000', 'A'.repeat(300), 'operations', 'api'),
  fc.uuid(),
);
const idArb: fc.Arbitrary<PathPart> = fc.oneof({ weight: 4, arbitrary: fc.nat({ max: 9 }).map((known) => ({ known })) }, { weight: 1, arbitrary: segmentArb });

function withId(template: string, id: PathPart, tail: string): PathPart[] {
  const [head, rest] = template.split(/\{[^/]+\}/);
  return rest === undefined ? [`${template}${tail}`] : [head ?? '', id, `${rest}${tail}`];
}
const templatePathArb: fc.Arbitrary<PathPart[]> = fc
  .tuple(fc.constantFrom(...ROUTE_SPECS.map((spec) => spec.template)), idArb, fc.constantFrom('', '', '', '/', '//'))
  .map(([template, id, tail]) => withId(template, id, tail));
const randomPathArb: fc.Arbitrary<PathPart[]> = fc
  .tuple(fc.constantFrom('/api/', '/', '/api', '//api/', '/API/'), fc.array(segmentArb, { maxLength: 4 }))
  .map(([prefix, segments]) => [`${prefix}${segments.join('/')}`]);

const queryValueArb = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.constantFrom('0', '1', '20', '100', '101', '1e2', '-1', '0x10', ' 5', 'queued', 'running', 'failed', 'test.claimable', 'demo.wait'),
  fc.base64String({ maxLength: 80 }),
);
const queryArb = fc.oneof(
  fc.constant(''),
  fc
    .array(fc.tuple(fc.oneof(fc.constantFrom('limit', 'cursor', 'status', 'taskType', 'state'), fc.string({ maxLength: 8 })), queryValueArb), { maxLength: 4 })
    .map((pairs) => pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')),
  fc.constantFrom('%', '&&=', 'limit', 'limit=5&limit=6', '=x', 'cursor=%ZZ'),
);

const keyArb = fc.oneof(
  { weight: 3, arbitrary: fc.stringMatching(/^[A-Za-z0-9._:-]{1,128}$/) },
  { weight: 3, arbitrary: fc.constantFrom('edge-key-1', 'edge-key-2', 'edge-key-3', 'edge-key-4') },
  { weight: 2, arbitrary: fc.constantFrom('', ' edge-key-1', 'a'.repeat(129), 'ключ', 'a,b', 'a b', 'edge-key-1\n') },
  { weight: 1, arbitrary: fc.string({ maxLength: 40, unit: 'grapheme' }) },
);
const headersArb: fc.Arbitrary<Record<string, string>> = fc
  .tuple(
    fc.option(
      fc.oneof(
        { weight: 8, arbitrary: fc.constant('application/json') },
        { weight: 3, arbitrary: fc.constantFrom(...JSON_CONTENT_TYPES) },
        { weight: 3, arbitrary: fc.constantFrom(...OTHER_CONTENT_TYPES) },
        { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
      ),
      { nil: undefined, freq: 8 },
    ),
    fc.option(fc.oneof(fc.constantFrom('Bearer', 'Bearer ', 'Basic dXNlcjpwYXNz', 'Bearer a.b.c'), fc.string({ maxLength: 60 }).map((s) => `Bearer ${s}`)), { nil: undefined, freq: 2 }),
    fc.option(keyArb, { nil: undefined, freq: 6 }),
    fc.dictionary(fc.stringMatching(/^x-[a-z0-9-]{1,12}$/), fc.string({ maxLength: 30 }), { maxKeys: 2 }),
  )
  .map(([contentType, authorization, key, extra]) => ({
    ...extra,
    ...(contentType === undefined ? {} : { 'content-type': contentType }),
    ...(authorization === undefined ? {} : { authorization }),
    ...(key === undefined ? {} : { 'idempotency-key': key }),
  }));

/** Admission bodies that are valid for a registered task type (so 202, 200 replays, 403, 422 and 429 all happen). */
const validAdmissionArb = fc.oneof(
  fc.record({
    taskType: fc.constant('demo.wait'),
    subject: fc.record({ type: fc.constant('doc'), id: fc.constantFrom('d1', 'd2', 'd3') }),
    params: fc.record({ durationMs: fc.constantFrom(10, 20) }),
  }),
  fc.record({ taskType: fc.constant('test.claimable'), subject: fc.record({ type: fc.constant('doc'), id: fc.constantFrom('d1', 'd2') }) }),
);
/** A valid admission with one thing broken: a key dropped, a key added, or a value of the wrong type. */
const brokenAdmissionArb = fc
  .tuple(validAdmissionArb, fc.constantFrom('taskType', 'subject', 'params', 'extra'), fc.oneof(fc.constant(undefined), fc.jsonValue({ maxDepth: 2 })))
  .map(([body, key, value]) => {
    const copy: Record<string, unknown> = { ...body };
    if (value === undefined) delete copy[key];
    else copy[key] = value;
    return copy;
  });
const subjectArb = fc.oneof(
  fc.record({ type: fc.constantFrom('doc', 'job', 'x'), id: fc.constantFrom('d1', 'd2', 'edge') }),
  fc.record({ type: fc.string({ maxLength: 70 }), id: fc.string({ maxLength: 130 }) }),
  fc.jsonValue({ maxDepth: 2 }),
);
const admissionBodyArb = fc
  .tuple(
    fc.record(
      {
        taskType: fc.oneof(fc.constantFrom('demo.wait', 'test.claimable', 'strategy.snapshot', 'nope.nope', 'DEMO.WAIT', ''), fc.jsonValue({ maxDepth: 1 })),
        subject: subjectArb,
        params: fc.oneof(fc.constant({}), fc.record({ durationMs: fc.oneof(fc.integer({ min: -5, max: 700_000 }), fc.jsonValue({ maxDepth: 1 })) }), fc.jsonValue({ maxDepth: 3 })),
      },
      { requiredKeys: [] },
    ),
    fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 2 }),
    fc.boolean(),
  )
  .map(([body, extra, addExtra]) => (addExtra ? { ...extra, ...body } : body));
const settingsBodyArb = fc.oneof(
  fc.constantFrom({ aiEnabled: false }, { aiEnabled: true }, { privacyMode: 'external_allowed' }),
  fc.record(
    { aiEnabled: fc.oneof(fc.boolean(), fc.jsonValue({ maxDepth: 1 })), privacyMode: fc.oneof(fc.constantFrom('local_only', 'external_allowed'), fc.string()), plan: fc.string({ maxLength: 10 }) },
    { requiredKeys: [] },
  ),
);
const jobBodyArb = fc.record(
  { title: fc.oneof(fc.string({ maxLength: 210 }), fc.jsonValue({ maxDepth: 1 })), company: fc.string({ maxLength: 20 }), description: fc.string({ maxLength: 200 }) },
  { requiredKeys: [] },
);
const jsonBodyArb = fc
  .oneof(
    { weight: 8, arbitrary: validAdmissionArb },
    { weight: 3, arbitrary: brokenAdmissionArb },
    { weight: 1, arbitrary: admissionBodyArb },
    { weight: 2, arbitrary: settingsBodyArb },
    { weight: 1, arbitrary: jobBodyArb },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  )
  .map((value) => JSON.stringify(value));
const bodyArb: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 5, arbitrary: jsonBodyArb },
  { weight: 1, arbitrary: fc.string({ maxLength: 60, unit: 'grapheme' }) },
  { weight: 1, arbitrary: fc.constantFrom('{', '{"taskType":', 'null', '[]', '""', '{"a":1}{"b":2}', '\u0000', '{"__proto__":{"x":1}}', 'NaN') },
  { weight: 1, arbitrary: fc.integer({ min: 16_000, max: 300_000 }).map((n) => JSON.stringify({ taskType: 'demo.wait', subject: { type: 'doc', id: 'x' }, params: { pad: 'x'.repeat(n) } })) },
);

const callerArb: fc.Arbitrary<Caller> = fc.oneof(
  { weight: 14, arbitrary: fc.constant({ kind: 'owner' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'other' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'unentitled' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'operator' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'none' as const }) },
  { weight: 1, arbitrary: fc.constantFrom<unknown>('', 'u'.repeat(129), 42, null, ['edge-owner']).map((sub) => ({ kind: 'sub' as const, sub })) },
);

const methodArb = fc.oneof({ weight: 6, arbitrary: fc.constantFrom('GET', 'POST', 'PATCH') }, { weight: 1, arbitrary: fc.constantFrom('PUT', 'DELETE', 'HEAD', 'OPTIONS', 'TRACE') });
const validJobArb = fc.record({ title: fc.constantFrom('Engineer', ' SRE '), company: fc.constantFrom('Acme', 'Initech'), description: fc.constantFrom('Build.', '  Run\n things.') });

/** Bodies aimed at one route: mostly what it parses (valid or slightly broken), sometimes anything. */
function bodyFor(spec: RouteSpec): fc.Arbitrary<string | undefined> {
  const json = (arbitrary: fc.Arbitrary<unknown>) => arbitrary.map((value) => JSON.stringify(value));
  if (spec.method === 'POST' && spec.template === '/api/operations') {
    return fc.oneof({ weight: 6, arbitrary: json(validAdmissionArb) }, { weight: 2, arbitrary: json(brokenAdmissionArb) }, { weight: 2, arbitrary: bodyArb });
  }
  if (spec.method === 'PATCH') return fc.oneof({ weight: 3, arbitrary: json(settingsBodyArb) }, { weight: 1, arbitrary: bodyArb });
  if (spec.method === 'POST' && spec.template === '/api/jobs') {
    return fc.oneof({ weight: 3, arbitrary: json(validJobArb) }, { weight: 2, arbitrary: json(jobBodyArb) }, { weight: 1, arbitrary: bodyArb });
  }
  // A route that takes no body: mostly none (so its own answers run), sometimes one (its 400).
  return fc.oneof({ weight: 4, arbitrary: fc.constantFrom(undefined, '') }, { weight: 1, arbitrary: bodyArb });
}

/** Routes, the ones that write weighted up: admission most. */
const specWeight = (spec: RouteSpec) => (spec.template === '/api/operations' && spec.method === 'POST' ? 6 : spec.method === 'GET' ? 1 : 2);

/** A request aimed at one route: its method, its path with a real or garbage id, a body for it. */
const routeRequestArb = fc.oneof(
  ...ROUTE_SPECS.map((spec) => ({
    weight: specWeight(spec),
    arbitrary: fc.record({ target: idArb.map((id) => ({ method: spec.method, path: withId(spec.template, id, '') })), body: bodyFor(spec) }),
  })),
);
/** A request with any method on a route's path or on a random path, and any body. */
const strayRequestArb = fc.record({ target: fc.record({ method: methodArb, path: fc.oneof({ weight: 2, arbitrary: templatePathArb }, { weight: 1, arbitrary: randomPathArb }) }), body: bodyArb });

/** Random requests: mostly aimed at real routes, with broken bodies, headers, ids and callers. */
export const edgeRequestArb: fc.Arbitrary<EdgeRequest> = fc
  .tuple(
    fc.oneof({ weight: 2, arbitrary: routeRequestArb }, { weight: 1, arbitrary: strayRequestArb }),
    fc.record({
      query: queryArb,
      caller: callerArb,
      headers: headersArb,
      base64: fc.oneof({ weight: 6, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    }),
  )
  .map(([aimed, rest]) => ({ ...aimed, ...rest }));

/** The path and query of `request`, its known-id placeholders replaced by the ids of this run. */
export function resolvePath(request: EdgeRequest, knownIds: readonly string[]): string {
  const path = request.target.path.map((part) => (typeof part === 'string' ? part : (knownIds[part.known % knownIds.length] ?? 'none'))).join('');
  return request.query === '' ? path : `${path}?${request.query}`;
}

/** The owner most requests come from. */
export const EDGE_OWNER = 'edge-owner';
/** Another owner, with an operation and a job of their own. */
export const EDGE_OTHER_OWNER = 'edge-other';
/** An owner whose settings turn AI off, so admitting `demo.wait` answers 403. */
export const EDGE_UNENTITLED_OWNER = 'edge-no-ai';

const OWNER_OF: Record<string, string> = { owner: EDGE_OWNER, operator: EDGE_OWNER, other: EDGE_OTHER_OWNER, unentitled: EDGE_UNENTITLED_OWNER };

/** The API Gateway event of `request` (base64 bodies encoded as API Gateway does for binary media types). */
export function edgeEvent(request: EdgeRequest, path: string): ApiEvent {
  const owner = OWNER_OF[request.caller.kind] ?? null;
  const body = request.body !== undefined && request.base64 ? Buffer.from(request.body, 'utf8').toString('base64') : request.body;
  const event = apiEvent({ method: request.target.method, path, owner, headers: request.headers, ...(body === undefined ? {} : { body }) });
  // Sent without a Content-Type when the request has none (apiEvent would add application/json).
  if (request.headers['content-type'] === undefined) delete (event.headers as Record<string, string | undefined>)['content-type'];
  const mutable = event as { isBase64Encoded: boolean; requestContext: { authorizer?: unknown } };
  mutable.isBase64Encoded = request.base64;
  if (request.caller.kind === 'operator') {
    // An operator as the local stack's operator rule knows one: the scope and the operator group (lib/local/dev-operator.ts).
    const claims = { sub: EDGE_OWNER, scope: 'ops:read', [DEV_OPERATOR_GROUP_CLAIM]: `[${DEV_OPERATOR_GROUP}]` };
    mutable.requestContext.authorizer = { jwt: { claims, scopes: null }, principalId: '', integrationLatency: 0 };
  }
  if (request.caller.kind === 'sub') {
    mutable.requestContext.authorizer = { jwt: { claims: { sub: request.caller.sub }, scopes: null }, principalId: '', integrationLatency: 0 };
  }
  return event;
}
