import { createHash } from 'node:crypto';
import { z } from 'zod';
import {
  beginDurableRecoveryOperation,
  defineTask,
  describeRecoveryOperationByKey,
  PermanentTaskError,
  RecoveryKeyUsedError,
  RecoveryModuleRegistry,
  RetryableTaskError,
  type RecoveryModule,
  type Store,
} from 'durable-ops';

/** The recovery-ledger module of webhook deliveries: one `http_post` record per delivery try. */
export const WEBHOOK_DELIVERY_MODULE = 'webhook.delivery';

/** What an operator does about a delivery whose answer was lost (shown by `GET /api/ops/recovery`). */
export const webhookDeliveryModule: RecoveryModule = {
  module: WEBHOOK_DELIVERY_MODULE,
  reconciliation:
    'Delivery try with no answer: ask the receiver whether it processed Idempotency-Key = recoveryPlan.deliveryId (the operation id), then resolve it with POST /api/ops/recovery/<id>/resolve-unknown (occurred true or false).',
};

/** Most delivery tries one operation may record, over all its attempts and owner retries. */
export const MAX_DELIVERY_TRIES = 100;

/** How long one POST may take, in ms, before it counts as unanswered. */
const DELIVERY_TIMEOUT_MS = 10_000;

/** Lease of a delivery's ledger record, in ms: longer than a POST may take. */
const LEDGER_LEASE_MS = 60_000;

/** Params of `webhook.deliver`: where to POST, and the JSON object to send. */
export const DeliverWebhookParamsSchema = z.strictObject({
  /** An http(s) URL. Only its origin and a SHA-256 of the whole URL reach the ledger (a query may hold a secret). */
  url: z.url({ protocol: /^https?$/ }).max(2048),
  /** Sent as the request body, JSON-encoded. */
  payload: z.record(z.string(), z.unknown()),
});

/** Ledger key of delivery try `n` (1, 2, …) of an operation. A key is spent for ever, whatever the outcome. */
export function deliveryKey(operationId: string, n: number): string {
  return `delivery:${operationId}:${n}`;
}

function sha256(text: string): string {
  return `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;
}

/**
 * Reads this operation's earlier delivery tries: `delivered` when one of them recorded a 2xx (then nothing is sent
 * again), else the number of the next try.
 */
async function nextDeliveryTry(ledger: Store, operationId: string): Promise<{ delivered: string } | { n: number }> {
  const modules = new RecoveryModuleRegistry();
  for (let n = 1; n <= MAX_DELIVERY_TRIES; n += 1) {
    const earlier = await describeRecoveryOperationByKey(ledger, modules, WEBHOOK_DELIVERY_MODULE, deliveryKey(operationId, n));
    if (!earlier) return { n };
    if (earlier.state === 'succeeded' || earlier.checkpoints.some((c) => c.kind === 'delivered')) return { delivered: earlier.id };
  }
  throw new PermanentTaskError(`${MAX_DELIVERY_TRIES} delivery tries are recorded for this operation; not trying again`);
}

/**
 * `webhook.deliver`: POSTs `params.payload` as JSON to `params.url`, recording each try in the recovery ledger
 * (module `webhook.delivery`, kind `http_post`, effect class `forward_only`: a POST cannot be undone, only checked
 * with the receiver).
 *
 * ```
 *  earlier try recorded a 2xx? ── yes ─▶ return (nothing is sent again)
 *        │ no
 *  begin(delivery:<operationId>:<n>)  ── the intent is committed before the POST
 *  lease still held? ── no ─▶ reject {reason}                  → retry later
 *  POST (Idempotency-Key: <operationId>)
 *    2xx                 ─▶ checkpoint delivered ─▶ complete   → succeeded
 *    5xx, 408, 429       ─▶ reject {httpStatus}                 → RetryableTaskError (the next attempt is try n+1)
 *    other 3xx/4xx       ─▶ reject {httpStatus}                 → PermanentTaskError
 *    no answer (timeout, connection lost, cancel)
 *                        ─▶ checkpoint no_answer, left running  → RetryableTaskError; once its lease expires the
 *                           try is an operator's `outcome_unknown` (the reconciliation action above)
 * ```
 *
 * What it guarantees: every POST has a committed ledger record before it is sent; after a 2xx is recorded, no attempt
 * of the operation sends again (a worker that dies between the 2xx and the operation's completion, and the retry
 * that follows, deliver once); and every try of one operation carries the same `Idempotency-Key`, the operation id.
 * What it cannot: know whether a receiver that never answered got the request. Such a try is sent again on the next
 * attempt with the same key, so a receiver that deduplicates on `Idempotency-Key` processes each operation once.
 */
export const deliverWebhookTask = defineTask({
  type: 'webhook.deliver',
  paramsSchema: DeliverWebhookParamsSchema,
  timeoutMs: 30_000,
  maxAttempts: 5,
  retry: { baseDelayMs: 1_000, maxDelayMs: 60_000 },
  // Bounds concurrent deliveries across every worker when the capacity file gives the route a limit
  // (`"routes": {"webhook-out": 20}`); unlimited otherwise.
  capacityRoute: 'webhook-out',
  async run({ operationId, attempt, params, signal, leaseHeld, scope }) {
    const ledger = scope.store.independent();
    const next = await nextDeliveryTry(ledger, operationId);
    if ('delivered' in next) return;
    const body = JSON.stringify(params.payload);
    const target = new URL(params.url);
    const handle = await beginDurableRecoveryOperation(scope.store, {
      module: WEBHOOK_DELIVERY_MODULE,
      kind: 'http_post',
      idempotencyKey: deliveryKey(operationId, next.n),
      request: { url: params.url, body },
      effectClass: 'forward_only',
      recoveryPlan: { check: 'ask_receiver', deliveryId: operationId, origin: target.origin, target: sha256(params.url) },
      preconditionEvidence: { try: next.n, attempt, bodyDigest: sha256(body) },
      leaseOwner: `task:${operationId}:${attempt}`,
      leaseMs: LEDGER_LEASE_MS,
    }).catch((error: unknown) => {
      // Another attempt of this operation (a worker paused past its lease) took try n first.
      if (error instanceof RecoveryKeyUsedError) throw new RetryableTaskError(`delivery try ${next.n} is taken by another attempt`);
      throw error;
    });
    // The self-fence (docs/design.md §3): never start the effect without the lease.
    if (!leaseHeld() || signal.aborted) {
      await handle.reject({ reason: 'lease_not_held' });
      throw new RetryableTaskError('the lease is no longer held: not delivering');
    }
    let response: Response;
    try {
      response = await fetch(params.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': operationId },
        body,
        redirect: 'manual',
        signal: AbortSignal.any([signal, AbortSignal.timeout(DELIVERY_TIMEOUT_MS)]),
      });
    } catch (error) {
      const reason = error instanceof Error ? error.name.replace(/[^A-Za-z0-9_.]/g, '').slice(0, 64) || 'Error' : 'Error';
      await handle.checkpoint('no_answer', { reason }).catch(() => undefined);
      throw new RetryableTaskError(`no answer from ${target.origin} (${reason})`);
    }
    await response.body?.cancel().catch(() => undefined);
    const evidence = { httpStatus: response.status, resultCode: `HTTP_${response.status}` };
    if (response.status >= 200 && response.status < 300) {
      await handle.checkpoint('delivered', evidence);
      await handle.complete({ checks: [{ name: 'receiver_accepted', evidence }] });
      return;
    }
    await handle.reject(evidence);
    if (response.status >= 500 || response.status === 408 || response.status === 429) {
      throw new RetryableTaskError(`the receiver answered HTTP ${response.status}`);
    }
    throw new PermanentTaskError(`the receiver refused the delivery: HTTP ${response.status}`);
  },
});
