import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SecretInEvidenceError } from '../../lib/errors.js';
import { beginDurableRecoveryOperation, type BeginRecoveryInput } from '../../lib/recovery/begin-recovery-operation.js';
import type { RecoveryHandle } from '../../lib/recovery/recovery-handle.js';
import { runCli } from '../support/run-script.js';
import { createTestDatabase, DIALECTS, hasMariadb, type TestDatabase } from '../support/test-store.js';
import { MUST_PASS, MUST_REFUSE } from './secret-corpus.js';

const LEASE_MS = 60_000;

describe.each(DIALECTS)('a recovery chain built from the secret corpus on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let t: TestDatabase;
  let handle: RecoveryHandle;
  let seq = 0;
  const [plan, precondition, ...progress] = MUST_PASS.map((c) => c.evidence);
  const input = (overrides: Partial<BeginRecoveryInput> = {}): BeginRecoveryInput => ({
    module: 'test.objects',
    kind: 'put_object',
    idempotencyKey: `corpus-${++seq}`,
    request: { bucket: 'results', key: `obj-${seq}` },
    effectClass: 'compensatable',
    recoveryPlan: plan ?? {},
    preconditionEvidence: precondition ?? {},
    leaseOwner: 'runtime-a',
    leaseMs: LEASE_MS,
    ...overrides,
  });
  const storedText = async (): Promise<string> => {
    const operations = await t.store.db.selectFrom('recovery_operations').select(['recovery_plan', 'precondition_evidence']).execute();
    const checkpoints = await t.store.db.selectFrom('recovery_checkpoints').select('evidence').execute();
    return JSON.stringify([operations, checkpoints]);
  };

  beforeAll(async () => {
    if (skip) return;
    t = await createTestDatabase(dialect);
    handle = await beginDurableRecoveryOperation(t.store, input());
    for (const [i, evidence] of progress.entries()) await handle.checkpoint(`corpus_${i}`, evidence);
  });
  afterAll(async () => t?.drop());

  it.skipIf(skip)('every refused corpus value throws SecretInEvidenceError at checkpoint and at begin, and nothing is stored', async () => {
    const countsBefore = await t.store.db.selectFrom('recovery_checkpoints').select(['operation_id', 'seq']).execute();
    const operationsBefore = await t.store.db.selectFrom('recovery_operations').select('id').execute();
    for (const refused of MUST_REFUSE) {
      await expect(handle.checkpoint('leak', refused.evidence), refused.name).rejects.toBeInstanceOf(SecretInEvidenceError);
      await expect(beginDurableRecoveryOperation(t.store, input({ recoveryPlan: refused.evidence })), refused.name).rejects.toBeInstanceOf(SecretInEvidenceError);
      await expect(beginDurableRecoveryOperation(t.store, input({ preconditionEvidence: refused.evidence })), refused.name).rejects.toBeInstanceOf(SecretInEvidenceError);
    }
    expect(await t.store.db.selectFrom('recovery_checkpoints').select(['operation_id', 'seq']).execute()).toHaveLength(countsBefore.length);
    expect(await t.store.db.selectFrom('recovery_operations').select('id').execute()).toHaveLength(operationsBefore.length);
    const stored = await storedText();
    for (const refused of MUST_REFUSE) expect(stored, refused.name).not.toContain(refused.secret);
  });

  it.skipIf(skip)('`recovery show` prints every allowed corpus value and no corpus secret, as text and as JSON', { timeout: 60_000 }, async () => {
    const text = await runCli(['recovery', 'show', handle.operationId], t.url);
    const json = await runCli(['recovery', 'show', handle.operationId, '--json'], t.url);
    expect(text).toMatchObject({ code: 0, stderr: '' });
    expect(json).toMatchObject({ code: 0, stderr: '' });
    const details = JSON.parse(json.stdout);
    expect(details.chain).toEqual({ ok: true });
    expect(details.recoveryPlan).toEqual(plan);
    expect(details.preconditionEvidence).toEqual(precondition);
    expect(details.checkpoints.slice(1).map((c: { evidence: unknown }) => c.evidence)).toEqual(progress);
    expect(text.stdout).toContain(String(plan?.bodyDigest));
    for (const refused of MUST_REFUSE) {
      expect(text.stdout, refused.name).not.toContain(refused.secret);
      expect(json.stdout, refused.name).not.toContain(refused.secret);
    }
  });
});
