/**
 * Operator-facing failure paths found by an adversarial review: the public OpenAPI document never lists the hidden
 * operator surface, a failed remote migration still prints every result, and bad arguments exit 2.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_ROUTES } from '../../lib/http/api-routes.js';
import { buildOpenApiDocument } from '../../lib/http/openapi.js';
import { startLocalLambda, type LocalLambda } from '../../lib/local/local-lambda.js';
import { runCli } from '../support/run-script.js';

describe('the public OpenAPI document vs the hidden operator surface', () => {
  it('does not publish operator-only routes (they answer 404 to everyone without ops:read, "never confirming" them)', () => {
    const doc = buildOpenApiDocument(API_ROUTES);
    const operatorPaths = API_ROUTES.filter((r) => r.access === 'operator').map((r) => r.path);
    expect(operatorPaths.length).toBeGreaterThan(0);
    for (const path of operatorPaths) expect(Object.keys(doc.paths ?? {}), path).not.toContain(path);
    expect(JSON.stringify(doc)).not.toContain('ops:read');
  });
});

describe('durable-ops migrate --remote prints each migration result, also when one failed', () => {
  let lambda: LocalLambda;
  beforeAll(async () => {
    lambda = await startLocalLambda({
      port: 0,
      functions: {
        'half-done': async () => ({
          results: [
            { migrationName: '20260101000100_first', direction: 'Up', status: 'Success' },
            { migrationName: '20260101000200_second', direction: 'Up', status: 'Error' },
            { migrationName: '20260101000300_third', direction: 'Up', status: 'NotExecuted' },
          ],
          error: '20260101000200_second failed: ER_TABLEACCESS_DENIED_ERROR (errno 1142)',
        }),
      },
    });
  });
  afterAll(async () => lambda?.close());

  it('exit 1, and stdout has the Success line of the applied migration and the Error line (infra/RUNBOOK.md §4)', async () => {
    const run = await runCli(['migrate', '--remote', 'half-done'], 'sqlite::memory:', { LAMBDA_ENDPOINT: lambda.endpoint, AWS_REGION: 'eu-west-1' });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/Up\s+Success\s+20260101000100_first/);
    expect(run.stdout).toMatch(/Up\s+Error\s+20260101000200_second/);
  });

  it('a malformed function name is a bad argument: exit 2, like every other usage error', async () => {
    const run = await runCli(['migrate', '--remote', 'not a function!'], 'sqlite::memory:', { LAMBDA_ENDPOINT: lambda.endpoint, AWS_REGION: 'eu-west-1' });
    expect(run.code).toBe(2);
  });
});

describe('operator list cursor validation', () => {
  const dir = mkdtempSync(join(tmpdir(), 'review-cursor-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a malformed --cursor is a bad argument: exit 2 with the usage, no "is DATABASE_URL migrated?" hint', async () => {
    const url = `sqlite:${join(dir, 'db.sqlite')}`;
    expect((await runCli(['migrate'], url)).code).toBe(0);
    const run = await runCli(['list', '--cursor', 'not-a-cursor'], url);
    expect(run.code).toBe(2);
    expect(run.stderr).not.toContain('migrate');
  });
});
