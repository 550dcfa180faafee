/**
 * One webhook delivery end to end on the local stack (`durable-ops/local`): admission over HTTP → SQS wake-up → the
 * worker claims and runs `webhook.deliver` → `succeeded`, with the recovery-ledger record of the delivery.
 *
 *   DATABASE_URL=sqlite:.data/example.sqlite npm run flow          # or mysql://user:pass@host:3306/db
 *   WEBHOOK_URL=https://example.com/hook npm run flow               # POST there instead of a receiver of its own
 *
 * It migrates the database, starts the stack on a free port, admits one operation (and sends the same request again:
 * the same operation), waits for it to end, prints the ledger records of its delivery tries, then runs the task's
 * handler once more as a later attempt would — which sends nothing, because a 2xx is recorded — and stops. The last
 * line is `flow result: {json}`; the exit code is 0 when the operation succeeded.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { describeRecoveryOperationByKey, OwnerScope, type OperationDto, type RecoveryDetails } from 'durable-ops';
import { signDevToken, startLocalApp } from 'durable-ops/local';
import { app } from './registry.js';
import { deliverWebhookTask, deliveryKey, WEBHOOK_DELIVERY_MODULE } from './tasks/deliver-webhook.js';

// The AWS SDK is pinned to exact releases that run on Node 20; its "newer releases will need Node 22" notice is noise.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const OWNER = process.env.FLOW_OWNER ?? 'alice';
const TIMEOUT_MS = Number(process.env.FLOW_TIMEOUT_MS ?? 60_000);

/** A receiver of its own when no WEBHOOK_URL is given: answers 204 and counts what it got. */
async function ownReceiver(): Promise<{ url: string; received: () => number; close: () => void }> {
  let received = 0;
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      received += 1;
      console.log(`receiver: ${request.method} ${request.url} Idempotency-Key: ${request.headers['idempotency-key']}`);
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hooks/orders`, received: () => received, close: () => server.close() };
}

const receiver = process.env.WEBHOOK_URL ? undefined : await ownReceiver();
const webhookUrl = process.env.WEBHOOK_URL ?? receiver!.url;
// PORT 0: any free port. The example serves only its own task types (no DEMO_TASKS, no AI_TASKS).
const stack = await startLocalApp(app, { env: { ...process.env, PORT: process.env.PORT ?? '0', DEMO_TASKS: '0', AI_TASKS: '0' } });
let succeeded = false;
try {
  const token = await signDevToken(OWNER, stack.devJwtSecret);
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': `flow-${randomUUID()}` };
  const request = JSON.stringify({
    taskType: 'webhook.deliver',
    subject: { type: 'order', id: 'order-42' },
    params: { url: webhookUrl, payload: { event: 'order.paid', orderId: 'order-42', amountCents: 1999 } },
  });

  // 1. Admission: 202 and the operation; the same request again (a double click) is the same operation.
  const admitted = await fetch(`${stack.url}/api/operations`, { method: 'POST', headers, body: request });
  if (admitted.status !== 202) throw new Error(`admission answered ${admitted.status}: ${await admitted.text()}`);
  const operation = (await admitted.json()) as OperationDto;
  const replay = await fetch(`${stack.url}/api/operations`, { method: 'POST', headers, body: request });
  const replayed = replay.status === 200 && ((await replay.json()) as OperationDto).id === operation.id;
  console.log(`admitted ${operation.id} (${operation.status}); the same request again: ${replay.status}, same operation: ${replayed}`);

  // 2. The worker claims and runs it; poll its status URL until it ends.
  let final = operation;
  const deadline = Date.now() + TIMEOUT_MS;
  while (!['succeeded', 'failed', 'cancelled'].includes(final.status)) {
    if (Date.now() > deadline) throw new Error(`operation ${operation.id} still ${final.status} after ${TIMEOUT_MS} ms`);
    await delay(100);
    final = (await (await fetch(`${stack.url}${operation.statusUrl}`, { headers })).json()) as OperationDto;
  }
  succeeded = final.status === 'succeeded';
  console.log(`operation ${final.id}: ${final.status} on attempt ${final.attempt}${final.failure ? ` (${final.failure.code})` : ''}`);

  // 3. The ledger: one record per delivery try, with its hash-chained checkpoints.
  const deliveries = async (): Promise<RecoveryDetails[]> => {
    const found: RecoveryDetails[] = [];
    for (let n = 1; ; n += 1) {
      const record = await describeRecoveryOperationByKey(stack.runtime.store, stack.runtime.recoveryModules, WEBHOOK_DELIVERY_MODULE, deliveryKey(final.id, n));
      if (!record) return found;
      found.push(record);
    }
  };
  const summary = (records: RecoveryDetails[]) =>
    records.map((r) => ({ id: r.id, state: r.state, chainOk: r.chain.ok, checkpoints: r.checkpoints.map((c) => c.kind) }));
  const before = await deliveries();
  for (const r of summary(before)) console.log(`ledger: ${r.id} ${r.state} [${r.checkpoints.join(' → ')}] chain ${r.chainOk ? 'ok' : 'BROKEN'}`);

  // 4. What a later attempt of this operation would do (say its worker died after the 2xx was recorded, before the
  //    operation's completion): the handler finds the recorded 2xx and sends nothing.
  if (succeeded) {
    await deliverWebhookTask.run({
      operationId: final.id,
      ownerUserId: OWNER,
      scope: new OwnerScope(stack.runtime.store, OWNER),
      subject: final.subject,
      params: deliverWebhookTask.paramsSchema.parse(JSON.parse(request).params),
      attempt: final.attempt + 1,
      maxAttempts: final.maxAttempts,
      signal: new AbortController().signal,
      leaseHeld: () => true,
      reportProgress: async () => undefined,
    });
  }
  const after = await deliveries();
  console.log(`a later attempt recorded ${after.length - before.length} new delivery tries`);
  if (receiver) console.log(`receiver got ${receiver.received()} request(s)`);
  console.log(
    `flow result: ${JSON.stringify({
      operationId: final.id,
      status: final.status,
      attempt: final.attempt,
      failure: final.failure?.code ?? null,
      replayed,
      deliveries: summary(after),
      laterAttemptTries: after.length - before.length,
    })}`,
  );
} finally {
  await stack.stop();
  receiver?.close();
}
process.exitCode = succeeded ? 0 : 1;
