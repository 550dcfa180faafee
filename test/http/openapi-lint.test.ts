import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_ROUTES } from '../../lib/http/api-routes.js';
import { openApiJson, type DocumentAudience } from '../../lib/http/openapi.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const bin = (name: string) => join(ROOT, 'node_modules', '.bin', name);

/** One finding of either linter, as `severity rule at where: message`, so a failure names every one. */
type Finding = string;

/** Redocly CLI (`redocly lint --format=json`) with the checked-in `redocly.yaml`: its errors and warnings. */
async function redocly(file: string): Promise<Finding[]> {
  const { stdout } = await run(bin('redocly'), ['lint', '--config', join(ROOT, 'redocly.yaml'), '--format=json', file], { cwd: ROOT }).catch(
    (error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }),
  );
  const report = JSON.parse(stdout) as { problems: Array<{ severity: string; ruleId: string; message: string; location?: Array<{ pointer?: string }> }> };
  return report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location?.[0]?.pointer ?? '?'}: ${p.message}`);
}

/** Spectral (`spectral lint -f json`) with the checked-in `.spectral.yaml`: every result, whatever its severity. */
async function spectral(file: string): Promise<Finding[]> {
  const output = `${file}.spectral.json`;
  await run(bin('spectral'), ['lint', '-r', join(ROOT, '.spectral.yaml'), '-f', 'json', '-o', output, '--fail-severity', 'hint', file], { cwd: ROOT }).catch(
    () => undefined,
  );
  const results = JSON.parse(await readFile(output, 'utf8')) as Array<{ severity: number; code: string; message: string; path: string[] }>;
  return results.map((r) => `${['error', 'warn', 'info', 'hint'][r.severity]} ${r.code} at ${r.path.join('.')}: ${r.message}`);
}

describe('the OpenAPI documents under the checked-in rule sets (redocly.yaml, .spectral.yaml)', () => {
  let dir: string;
  const files: Record<DocumentAudience, string> = { owner: '', operator: '' };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'openapi-lint-'));
    for (const audience of ['owner', 'operator'] as const) {
      files[audience] = join(dir, `${audience}.json`);
      await writeFile(files[audience], openApiJson(API_ROUTES, audience));
    }
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it.each(['owner', 'operator'] as const)('the %s document: Redocly reports 0 errors and 0 warnings', async (audience) => {
    expect(await redocly(files[audience])).toEqual([]);
  }, 60_000);

  it.each(['owner', 'operator'] as const)('the %s document: Spectral reports nothing at all', async (audience) => {
    expect(await spectral(files[audience])).toEqual([]);
  }, 60_000);

  it('the linters are not vacuous: a document without servers, tags or descriptions is refused by both', async () => {
    const broken = JSON.parse(openApiJson(API_ROUTES));
    delete broken.servers;
    delete broken.info.contact;
    broken.tags = broken.tags.map(({ name }: { name: string }) => ({ name }));
    const file = join(dir, 'broken.json');
    await writeFile(file, JSON.stringify(broken));
    expect((await redocly(file)).join('\n')).toMatch(/no-empty-servers[\s\S]*tag-description/);
    expect((await spectral(file)).join('\n')).toMatch(/oas3-api-servers[\s\S]*info-contact|info-contact[\s\S]*oas3-api-servers/);
  }, 60_000);
});
