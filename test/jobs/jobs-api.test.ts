import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScopeViolationError } from '../../lib/errors.js';
import { ProblemSchema } from '../../lib/http/problem-details.js';
import { JobDtoSchema } from '../../lib/jobs/job-dto.js';
import { JobLimits } from '../../lib/jobs/job-limits.js';
import { createJob, getJob } from '../../lib/jobs/jobs.js';
import { OwnerScope, WorkerScope } from '../../lib/operations/scopes.js';
import { createApiTestApp, type ApiTestApp } from '../http/api-test-app.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const EMOJI = '😀'; // one character (code point), two UTF-16 units, four UTF-8 bytes
const CJK = '職'; // one character, one UTF-16 unit, three UTF-8 bytes

const validJob = { title: 'Staff Engineer', company: 'Acme', description: 'Build durable things.' };

describe.each(DIALECTS)('POST /api/jobs and GET /api/jobs/{jobId} on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  beforeAll(async () => {
    if (!skip) app = await createApiTestApp(dialect);
  });
  afterAll(async () => app?.drop());

  const post = (owner: string, body: unknown) =>
    app.call({ method: 'POST', path: '/api/jobs', owner, headers: { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body }) });
  const get = (owner: string, jobId: string) => app.call({ method: 'GET', path: `/api/jobs/${jobId}`, owner });
  const countJobs = async (owner?: string) => {
    let select = app.db.store.db.selectFrom('jobs').select((eb) => eb.fn.countAll<number>().as('n'));
    if (owner !== undefined) select = select.where('owner_user_id', '=', owner);
    return Number((await select.executeTakeFirstOrThrow()).n);
  };
  const create = async (owner: string, body: unknown = validJob) => {
    const response = await post(owner, body);
    expect(response.status, response.text).toBe(201);
    return JobDtoSchema.parse(response.json);
  };

  it.skipIf(skip)('a created job answers 201 with Location: /api/jobs/{id} and exactly the job DTO, which GET then answers', async () => {
    const response = await post('alice', validJob);
    expect(response.status).toBe(201);
    expect(response.headers['content-type']).toBe('application/json');
    expect(response.headers['cache-control']).toBe('no-store');
    const job = JobDtoSchema.parse(response.json);
    expect(Object.keys(response.json).sort()).toEqual(['company', 'createdAt', 'description', 'id', 'title', 'updatedAt']);
    expect(job.id).toMatch(UUID);
    expect(response.headers.location).toBe(`/api/jobs/${job.id}`);
    expect(job).toMatchObject(validJob);
    expect(job.createdAt).toBe(job.updatedAt);
    expect(Math.abs(Date.parse(job.createdAt) - Date.now())).toBeLessThan(60_000);
    expect(response.text).not.toContain('alice');

    const read = await get('alice', job.id);
    expect(read.status).toBe(200);
    expect(read.headers['cache-control']).toBe('no-store');
    expect(JobDtoSchema.parse(read.json)).toEqual(job);
  });

  it.skipIf(skip)('every POST creates a new job: the same body twice makes two jobs', async () => {
    const first = await create('repeat');
    const second = await create('repeat');
    expect(second.id).not.toBe(first.id);
    expect(await countJobs('repeat')).toBe(2);
  });

  it.skipIf(skip)("another owner's job answers 404 problem+json with exactly the body of a job that does not exist", async () => {
    const job = await create('alice', { ...validJob, title: 'Secret title of alice' });
    const foreign = await get('mallory', job.id);
    const missing = await get('mallory', '00000000-0000-4000-8000-000000000000');
    expect(foreign.status).toBe(404);
    expect(foreign.headers['content-type']).toBe('application/problem+json');
    expect(ProblemSchema.parse(foreign.json)).toMatchObject({ status: 404, code: 'job_not_found', type: 'https://durable-ops.dev/problems/job-not-found' });
    expect(foreign.json).toEqual(missing.json);
    expect(foreign.headers).toEqual(missing.headers);
    expect(foreign.text).not.toContain('Secret title');
    expect(foreign.text).not.toContain(job.id);
    expect((await get('alice', job.id)).status).toBe(200);
  });

  it.skipIf(skip)('a malformed job id answers the same 404 as a missing job, never a 400', async () => {
    const job = await create('alice');
    const missing = await get('alice', '00000000-0000-4000-8000-000000000000');
    for (const id of ['not-a-uuid', job.id.toUpperCase(), `${job.id}0`, job.id.slice(1), 'x'.repeat(600), '%F0%9F%98%80']) {
      const response = await get('alice', id);
      expect(response.status, id).toBe(404);
      expect(response.json, id).toEqual(missing.json);
    }
  });

  it.skipIf(skip)('title and company are stored trimmed; the description exactly as sent, whitespace and all', async () => {
    const description = '  Indented first line\n\n\tTabbed line\r\ntrailing newline\n';
    const job = await create('trim', { title: '  Staff Engineer \t', company: '\u00a0Acme\u3000', description });
    expect(job.title).toBe('Staff Engineer');
    expect(job.company).toBe('Acme');
    expect(job.description).toBe(description);
    expect(JobDtoSchema.parse((await get('trim', job.id)).json)).toEqual(job);
  });

  it.skipIf(skip)('a 200-character title and company of emoji or CJK (one character each) are accepted and read back intact', async () => {
    const title = EMOJI.repeat(JobLimits.title);
    const company = CJK.repeat(JobLimits.company);
    expect(title.length).toBe(2 * JobLimits.title);
    const job = await create('wide', { ...validJob, title, company });
    const read = JobDtoSchema.parse((await get('wide', job.id)).json);
    expect(read.title).toBe(title);
    expect(read.company).toBe(company);
  });

  const invalid: Array<[string, unknown]> = [
    ['a title of 201 characters', { ...validJob, title: 't'.repeat(JobLimits.title + 1) }],
    ['a title of 201 emoji', { ...validJob, title: EMOJI.repeat(JobLimits.title + 1) }],
    ['a company of 201 characters', { ...validJob, company: 'c'.repeat(JobLimits.company + 1) }],
    ['a company of 201 CJK characters', { ...validJob, company: CJK.repeat(JobLimits.company + 1) }],
    ['an empty title', { ...validJob, title: '' }],
    ['a title of whitespace only', { ...validJob, title: ' \t ' }],
    ['an empty company', { ...validJob, company: '' }],
    ['an empty description', { ...validJob, description: '' }],
    ['a description of whitespace only', { ...validJob, description: ' \n\t ' }],
    ['no title', { company: validJob.company, description: validJob.description }],
    ['no company', { title: validJob.title, description: validJob.description }],
    ['no description', { title: validJob.title, company: validJob.company }],
    ['an extra key', { ...validJob, ownerUserId: 'mallory-was-here' }],
    ['an id chosen by the client', { ...validJob, id: '00000000-0000-4000-8000-000000000000' }],
    ['a title that is a number', { ...validJob, title: 42 }],
    ['a company that is null', { ...validJob, company: null }],
    ['a description that is an array', { ...validJob, description: ['line'] }],
    ['a description that is an object', { ...validJob, description: { text: 'x' } }],
    ['a title over two lines', { ...validJob, title: 'Staff\nEngineer' }],
    ['a title with a control character', { ...validJob, title: 'Staff\u0007Engineer' }],
    ['a description with a NUL character', { ...validJob, description: 'before\u0000after' }],
    ['a description with a lone surrogate', { ...validJob, description: 'broken \ud800 text' }],
    ['a title with a lone low surrogate', { ...validJob, title: '\udc00' }],
    ['a JSON array', [validJob]],
    ['a body that is not JSON', 'title=Staff'],
    ['no body', undefined],
    ['a body over the 256 KiB cap', { ...validJob, description: 'd'.repeat(257 * 1024) }],
  ];

  it.skipIf(skip).each(invalid)('POST with %s answers 400 problem+json and writes nothing', async (_name, body) => {
    const before = await countJobs();
    const response = await post('bob', body);
    expect(response.status).toBe(400);
    expect(response.headers['content-type']).toBe('application/problem+json');
    expect(ProblemSchema.parse(response.json)).toMatchObject({ status: 400, code: 'validation_failed' });
    expect(response.text).not.toContain('mallory-was-here');
    expect(response.text).not.toContain('ttttt');
    expect(await countJobs()).toBe(before);
    expect(await countJobs('bob')).toBe(0);
  });

  it.skipIf(skip)('a refused POST names the field that failed, without echoing its value', async () => {
    const response = await post('bob', { ...validJob, title: 'x'.repeat(JobLimits.title + 1), extra: 'mallory-was-here' });
    const problem = ProblemSchema.parse(response.json);
    expect(problem.errors?.map((e) => e.path).sort()).toEqual(['body', 'body.title']);
    expect(problem.errors?.find((e) => e.path === 'body.title')?.message).toBe('must be at most 200 characters');
    expect(response.text).not.toContain('xxxxx');
  });
});

/** JSON text with every UTF-16 unit of every string escaped as `\uXXXX`, as Python's `json.dumps` writes it by default. */
function asciiEscapedJson(value: Record<string, string>): string {
  const escape = (text: string) => text.replace(/[\s\S]/g, (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return `{${Object.entries(value).map(([key, text]) => `"${key}":"${escape(text)}"`).join(',')}}`;
}

describe.each(DIALECTS)('the description bound over HTTP on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  beforeAll(async () => {
    if (!skip) app = await createApiTestApp(dialect);
  });
  afterAll(async () => app?.drop());

  const countJobs = async () => Number((await app.db.store.db.selectFrom('jobs').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);

  it.skipIf(skip).each([
    ['ASCII', 'a'],
    ['CJK (3 UTF-8 bytes each)', CJK],
    ['emoji (4 UTF-8 bytes, 2 UTF-16 units each)', EMOJI],
  ])('a description of exactly 20,000 characters of %s is stored and read back intact', async (_name, unit) => {
    const description = `${unit.repeat(JobLimits.description - 2)}\n${unit}`;
    // The worst case of the body cap: a client that escapes every character (240,000 bytes for 20,000 emoji).
    const posted = await app.call({ method: 'POST', path: '/api/jobs', owner: 'author', body: asciiEscapedJson({ ...validJob, description }) });
    expect(posted.status).toBe(201);
    const created = JobDtoSchema.parse(posted.json);
    expect(created.description).toBe(description);
    const stored = await app.db.store.db.selectFrom('jobs').select('description').where('id', '=', created.id).executeTakeFirstOrThrow();
    expect(stored.description).toBe(description);
    const response = await app.call({ method: 'GET', path: `/api/jobs/${created.id}`, owner: 'author' });
    expect(response.status).toBe(200);
    expect(JobDtoSchema.parse(response.json).description).toBe(description);
  });

  it.skipIf(skip).each([
    ['ASCII', 'a'],
    ['emoji', EMOJI],
  ])('a description of 20,001 characters of %s is refused with a validation error and writes nothing', async (_name, unit) => {
    const before = await countJobs();
    const posted = await app.call({ method: 'POST', path: '/api/jobs', owner: 'author', body: { ...validJob, description: unit.repeat(JobLimits.description + 1) } });
    expect(posted.json).toMatchObject({ status: 400, code: 'validation_failed' });
    expect(await countJobs()).toBe(before);
  });

  it.skipIf(skip)('the worker scope can neither create nor read jobs (runtime check behind the types)', async () => {
    const owner = new OwnerScope(app.db.store, 'author');
    const job = await createJob(owner, validJob);
    const worker = new WorkerScope(app.db.store) as unknown as OwnerScope;
    await expect(createJob(worker, validJob)).rejects.toThrow(ScopeViolationError);
    await expect(getJob(worker, job.id)).rejects.toThrow(ScopeViolationError);
  });
});
