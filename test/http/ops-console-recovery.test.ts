import { ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UnknownResolutionSchema } from '../../lib/index.js';
import { createApiHandler } from '../../lib/http/api-handler.js';
import { startLocalQueue, type LocalQueue } from '../../lib/local/local-queue.js';
import { beginDurableRecoveryOperation } from '../../lib/recovery/begin-recovery-operation.js';
import { loadVerifiedChain } from '../../lib/recovery/chain-verification.js';
import { findRecoveryOperation, listCheckpoints } from '../../lib/recovery/recovery.repository.js';
import { takeOverRecoveryOperation } from '../../lib/recovery/take-over-recovery-operation.js';
import { apiEvent, lambdaContext, parseResponse, type ParsedResponse } from '../support/api-events.js';
import { DIALECTS, hasMariadb } from '../support/test-store.js';
import { buildLedgerFixture, LONG_LEASE_MS, testRecoveryModules, type LedgerFixture } from '../recovery/ops-fixtures.js';
import { createApiTestApp, type ApiTestApp } from './api-test-app.js';

const WRITER = { owner: 'ops-alice', scope: 'ops:read ops:write' } as const;
const FOUND = { occurred: true, verification: { checks: [{ name: 'provider_lookup', evidence: { providerResult: 'FOUND', requestRef: 'req-1' } }] } };
const SECRET = 'Bearer abcdefghijklmnopqrstuvwxyz0123';

describe.each(DIALECTS)('operator console: recovery and dead letters, on %s', (dialect) => {
  const skip = dialect === 'mariadb' && !hasMariadb();
  let app: ApiTestApp;
  let queue: LocalQueue;
  let ledger: LedgerFixture;

  beforeAll(async () => {
    if (skip) return;
    queue = await startLocalQueue({ queueName: `console-${dialect}-${Date.now()}` });
    app = await createApiTestApp(dialect, { recoveryModules: testRecoveryModules(), deadLetters: { client: queue.client, dlqUrl: queue.dlqUrl, queueUrl: queue.queueUrl } });
    ledger = await buildLedgerFixture(app.db);
  });
  afterAll(async () => {
    await app?.drop();
    await queue?.stop();
  });

  const resolve = (id: string, body: unknown): Promise<ParsedResponse> =>
    app.call({ method: 'POST', path: `/api/ops/recovery/${id}/resolve-unknown`, ...WRITER, body });
  /**
   * A recovery operation of `test.queue` left `outcome_unknown` by a takeover whose lease has expired too (optionally
   * after a progress checkpoint), so the next takeover — the operator's — may take it.
   */
  const staleUnknown = async (key: string, withCheckpoint = false) => {
    const begun = await beginDurableRecoveryOperation(app.db.store, {
      module: 'test.queue',
      kind: 'send_message',
      idempotencyKey: `console-${dialect}-${key}`,
      request: { key },
      effectClass: 'irreversible',
      recoveryPlan: { check: 'provider_lookup' },
      preconditionEvidence: { probe: 'none' },
      leaseOwner: 'worker-1',
      leaseMs: 1_000,
    });
    if (withCheckpoint) await begun.checkpoint('message_sent', { messageRef: 'm-1' });
    app.db.clock.advance(1_001);
    await takeOverRecoveryOperation(app.db.store, { operationId: begun.operationId, leaseOwner: 'reconciler', leaseMs: 1_000 });
    app.db.clock.advance(1_001);
    return begun.operationId;
  };
  const snapshot = async (id: string) => {
    const row = await findRecoveryOperation(app.db.store, id);
    return { state: row?.state, fence: row?.fence, count: row?.checkpoint_count, leaseOwner: row?.lease_owner };
  };

  it.skipIf(skip)('a resolution failing UnknownResolutionSchema is a 400 with field errors, and nothing is taken over', async () => {
    const before = await snapshot(ledger.outcomeUnknown);
    // [body, the path the 400 names, whether the shape alone passes UnknownResolutionSchema (a secret is refused after it)]
    const cases: ReadonlyArray<readonly [unknown, string, boolean]> = [
      [{ verification: FOUND.verification }, 'body.occurred', false],
      [{ occurred: true, verification: { checks: [] } }, 'body.verification.checks', false],
      [{ occurred: true, verification: { checks: [{ name: 'Lookup!', evidence: { a: 1 } }] } }, 'body.verification.checks.0.name', false],
      [{ occurred: true, verification: { checks: [{ name: 'lookup', evidence: {} }] } }, 'body.verification.checks.0.evidence', false],
      [{ occurred: true, verification: { checks: [{ name: 'lookup', evidence: { nested: { deep: 1 } } }] } }, 'body.verification.checks.0.evidence.nested', false],
      [{ occurred: true, verification: { checks: [{ name: 'lookup', evidence: { note: SECRET } }] } }, 'body.verification.checks.0.evidence.note', true],
      [{ ...FOUND, extra: 1 }, 'body', false],
    ];
    for (const [body, path, shapeValid] of cases) {
      expect(UnknownResolutionSchema.safeParse(body).success, path).toBe(shapeValid);
      const response = await resolve(ledger.outcomeUnknown, body);
      expect(response.status, path).toBe(400);
      expect(response.json.code, path).toBe('validation_failed');
      expect(response.json.errors.map((e: any) => e.path), path).toContain(path);
      expect(response.text).not.toContain(SECRET);
    }
    expect((await resolve(ledger.outcomeUnknown, 'not json')).status).toBe(400);
    expect(await snapshot(ledger.outcomeUnknown)).toEqual(before);
  });

  it.skipIf(skip)('409 when the operation is not outcome_unknown or a live lease holds it; 404 for an unknown id — nothing written', async () => {
    const required = await snapshot(ledger.recoveryRequired);
    const wrongState = await resolve(ledger.recoveryRequired, FOUND);
    expect(wrongState.status).toBe(409);
    expect(wrongState.json.code).toBe('invalid_recovery_move');
    expect(await snapshot(ledger.recoveryRequired)).toEqual(required);

    const held = await snapshot(ledger.outcomeUnknown);
    const leased = await resolve(ledger.outcomeUnknown, FOUND);
    expect(leased.status).toBe(409);
    expect(leased.json.code).toBe('nothing_to_take_over');
    expect(await snapshot(ledger.outcomeUnknown)).toEqual(held);

    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-an-id']) {
      const missing = await resolve(id, FOUND);
      expect(missing.status, id).toBe(404);
      expect(missing.json.code).toBe('recovery_operation_not_found');
    }
  });

  it.skipIf(skip)('once the holder’s lease expired, the operator resolves it: taken over under a new fence, proof it did not happen → verified_recovered', async () => {
    app.db.clock.advance(LONG_LEASE_MS + 1);
    const body = { occurred: false, verification: { checks: [{ name: 'worker_log', evidence: { messagesSeen: 0 } }, { name: 'provider_lookup', evidence: { providerResult: 'NOT_FOUND' } }] } };
    expect(UnknownResolutionSchema.parse(body)).toEqual(body);
    const response = await resolve(ledger.outcomeUnknown, body);
    expect(response.status).toBe(200);
    expect(response.json).toEqual({ id: ledger.outcomeUnknown, state: 'verified_recovered' });
    const chain = await listCheckpoints(app.db.store, ledger.outcomeUnknown);
    expect(chain.slice(-4).map((c) => [c.kind, c.state])).toEqual([
      ['takeover', 'outcome_unknown'],
      ['resolved_not_occurred', 'recovery_required'],
      ['recovering', 'recovering'],
      ['verified_recovered', 'verified_recovered'],
    ]);
    expect(await loadVerifiedChain(app.db.store, ledger.outcomeUnknown)).toEqual({ ok: true });
    expect(await snapshot(ledger.outcomeUnknown)).toMatchObject({ state: 'verified_recovered', leaseOwner: null });
    const list = await app.call({ method: 'GET', path: '/api/ops/recovery', ...WRITER });
    expect(list.json.items.map((item: any) => item.id)).not.toContain(ledger.outcomeUnknown);
    expect((await resolve(ledger.outcomeUnknown, body)).status).toBe(409);
  });

  it.skipIf(skip)('proof the effect happened → succeeded, with the operator’s checks in the chain and the lease released', async () => {
    const id = await staleUnknown('found');
    const response = await resolve(id, FOUND);
    expect(response.status).toBe(200);
    expect(response.json).toEqual({ id, state: 'succeeded' });
    const chain = await listCheckpoints(app.db.store, id);
    expect(chain.map((c) => c.kind)).toEqual(['begin', 'takeover', 'takeover', 'resolved_occurred']);
    expect(JSON.parse(chain[3]!.evidence)).toMatchObject({ checks: ['provider_lookup'], 'provider_lookup.providerResult': 'FOUND' });
    expect(chain[2]).toMatchObject({ fence: 3, previous_fence: 2 });
    expect(await snapshot(id)).toEqual({ state: 'succeeded', fence: 3, count: 4, leaseOwner: null });
    expect(await loadVerifiedChain(app.db.store, id)).toEqual({ ok: true });
  });

  it.skipIf(skip)('redrive moves the dead letters back to the worker queue, each once, within maxMessages', async () => {
    const bodies = ['{"v":1,"reason":"retry","operationId":"dead-1"}', '{"v":1,"reason":"retry","operationId":"dead-2"}', '{"v":1,"reason":"retry","operationId":"dead-3"}'];
    for (const body of bodies) await queue.client.send(new SendMessageCommand({ QueueUrl: queue.dlqUrl, MessageBody: body }));

    const one = await app.call({ method: 'POST', path: '/api/ops/dlq/redrive', ...WRITER, body: { maxMessages: 1 } });
    expect(one.status).toBe(200);
    expect(one.json).toEqual({ moved: 1, skipped: 0, rejected: 0 });
    const rest = await app.call({ method: 'POST', path: '/api/ops/dlq/redrive', ...WRITER });
    expect(rest.json).toEqual({ moved: 2, skipped: 0, rejected: 0 });
    const empty = await app.call({ method: 'POST', path: '/api/ops/dlq/redrive', ...WRITER, body: {} });
    expect(empty.json).toEqual({ moved: 0, skipped: 0, rejected: 0 });

    const main = await queue.client.send(new ReceiveMessageCommand({ QueueUrl: queue.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
    expect((main.Messages ?? []).map((m) => m.Body).sort()).toEqual([...bodies].sort());
    const ledgerRows = await app.db.store.db.selectFrom('recovery_operations').select(['state']).where('module', '=', 'queue.redrive').execute();
    expect(ledgerRows.map((row) => row.state)).toEqual(['succeeded', 'succeeded', 'succeeded']);
    expect(`${one.text}${rest.text}`).not.toContain('dead-1');

    for (const body of [{ maxMessages: 0 }, { maxMessages: 101 }, { max: 5 }, '[]']) {
      expect((await app.call({ method: 'POST', path: '/api/ops/dlq/redrive', ...WRITER, body })).status, JSON.stringify(body)).toBe(400);
    }
  });

  it.skipIf(skip)('redrive without a configured dead-letter queue is a 409', async () => {
    const { deadLetters: _none, ...deps } = app.deps;
    const handler = createApiHandler(deps);
    const response = parseResponse(await handler(apiEvent({ method: 'POST', path: '/api/ops/dlq/redrive', ...WRITER }), lambdaContext()));
    expect(response.status).toBe(409);
    expect(response.json.code).toBe('dead_letter_queue_not_configured');
  });

  it.skipIf(skip)('a broken hash chain refuses the resolution with 409; the takeover stands, held by operator:<sub> until its lease runs out', async () => {
    const id = await staleUnknown('broken', true);
    await app.db.store.db.updateTable('recovery_checkpoints').set({ evidence: '{"messageRef":"m-2"}' }).where('operation_id', '=', id).where('seq', '=', 1).execute();
    const response = await resolve(id, FOUND);
    expect(response.status).toBe(409);
    expect(response.json.code).toBe('chain_broken');
    expect(await snapshot(id)).toMatchObject({ state: 'outcome_unknown', leaseOwner: 'operator:ops-alice', fence: 3 });
  });
});
