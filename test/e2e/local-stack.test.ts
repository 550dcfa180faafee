import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { parseModelAttempts } from '../../lib/ai/model-provenance.js';
import { openStore } from '../../lib/db/store.js';
import { signDevToken } from '../../lib/local/dev-token.js';
import { freePort } from '../support/free-port.js';
import { startStackProcess, type StackProcess } from '../support/local-stack-process.js';
import { waitFor } from '../support/wait-for.js';

const SECRET = 'e2e-dev-secret-that-is-at-least-32-characters';
const FAST = { LEASE_SECONDS: '5', HEARTBEAT_SECONDS: '1', SWEEP_INTERVAL_SECONDS: '1', RETRY_BASE_SECONDS: '1', DEV_JWT_SECRET: SECRET };

describe('local stack (npm start) end to end', () => {
  const dir = mkdtempSync(join(tmpdir(), 'durable-ops-e2e-'));
  const running: StackProcess[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((p) => p.kill('SIGTERM')));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('the README walk-through runs as printed: demo.wait, cancel and retry, then a strategy snapshot from the stand-in model', async () => {
    const port = await freePort();
    const stack = await startStackProcess(port, { ...FAST, DATABASE_URL: `sqlite:${dir}/walkthrough.sqlite` });
    running.push(stack);
    const readme = readFileSync('README.md', 'utf8');
    const script = /<!-- walkthrough:start -->\s*```bash\n([\s\S]*?)```\s*<!-- walkthrough:end -->/.exec(readme)?.[1];
    expect(script, 'README.md must hold the walk-through between walkthrough markers').toBeTruthy();
    const { stdout } = await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', script as string], {
      env: { ...process.env, BASE: stack.url, DEV_JWT_SECRET: SECRET, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
      timeout: 120_000,
    });
    const lines = stdout.trim().split('\n');
    expect(lines).toContain('{"status":404,"code":"snapshot_not_found"}');
    expect(lines.some((line) => line.startsWith('second request: the same operation '))).toBe(true);
    expect(lines.some((line) => /^\{"status":404,"code":"snapshot_not_found","statusUrl":"\/api\/operations\/[0-9a-f-]{36}"\}$/.test(line))).toBe(true);
    expect(lines.find((line) => line.startsWith('{"summary":'))).toContain('[stand-in]');
    expect(lines.at(-1)).toBe('succeeded');
  });

  it('a lambda: model route goes through the local Lambda Invoke API (the @aws-sdk/client-lambda path)', async () => {
    const port = await freePort();
    const database = `${dir}/lambda-route.sqlite`;
    const stack = await startStackProcess(port, { ...FAST, DATABASE_URL: `sqlite:${database}`, MODEL_LOCAL_URL: 'lambda:durable-ops-model-stand-in' });
    running.push(stack);
    const token = await signDevToken('lambda-owner', SECRET);
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const job = await fetch(`${stack.url}/api/jobs`, { method: 'POST', headers, body: JSON.stringify({ title: 'SRE', company: 'Acme', description: 'On call.' }) });
    const { id: jobId } = (await job.json()) as { id: string };
    const requested = await fetch(`${stack.url}/api/jobs/${jobId}/strategy-snapshot`, { method: 'POST', headers: { ...headers, 'idempotency-key': 'lambda-1' } });
    expect(requested.status).toBe(202);
    await waitFor(async () => (await fetch(`${stack.url}/api/jobs/${jobId}/strategy-snapshot`, { headers })).status === 200, {
      timeoutMs: 30_000,
      what: 'the snapshot to be published',
    });
    const store = openStore(`sqlite:${database}`);
    try {
      const row = await store.db.selectFrom('operations').select('model_attempts').executeTakeFirstOrThrow();
      expect(parseModelAttempts(row.model_attempts)).toEqual([
        { attempt: 1, route: 'local', provider: 'lambda', model: 'local', outcome: 'ok' },
      ]);
    } finally {
      await store.destroy();
    }
  });

  it('SIGKILL mid-operation, restart with every SQS message lost: the operation succeeds on attempt 2', async () => {
    const port = await freePort();
    const env = { ...FAST, DATABASE_URL: `sqlite:${dir}/crash.sqlite` };
    const first = await startStackProcess(port, env);
    running.push(first);
    const token = await signDevToken('crash-owner', SECRET);
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const admitted = await fetch(`${first.url}/api/operations`, {
      method: 'POST',
      headers: { ...headers, 'idempotency-key': 'crash-1' },
      body: JSON.stringify({ taskType: 'demo.wait', subject: { type: 'demo', id: 'crash' }, params: { durationMs: 4000 } }),
    });
    expect(admitted.status).toBe(202);
    const { statusUrl } = (await admitted.json()) as { statusUrl: string };
    const read = async (base: string) => (await (await fetch(`${base}${statusUrl}`, { headers })).json()) as { status: string; attempt: number; progress: { percent: number } };
    await waitFor(async () => {
      const op = await read(first.url);
      return op.status === 'running' && op.progress.percent > 0;
    }, { timeoutMs: 20_000, what: 'the operation to be running' });

    await first.kill('SIGKILL');
    running.splice(running.indexOf(first), 1);
    const second = await startStackProcess(port, env);
    running.push(second);
    const done = await waitFor(async () => {
      const op = await read(second.url);
      return op.status === 'succeeded' ? op : undefined;
    }, { timeoutMs: 45_000, intervalMs: 250, what: 'the operation to succeed after the restart' });
    expect(done.attempt).toBe(2);
  });
});
