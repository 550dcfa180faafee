import { createApiHandler } from '../../lib/http/api-handler.js';
import { SignJWT } from 'jose';
import { DEV_TOKEN_AUDIENCE, DEV_TOKEN_ISSUER, signDevToken } from '../../lib/local/dev-token.js';
import { startLocalHttpServer, type LocalHttpServer } from '../../lib/local/local-http-server.js';
import { loadConfig } from '../../lib/config.js';
import { startLocalStack, type LocalStack } from '../../lib/local/local-stack.js';
import { silentLogger } from '../../lib/logger.js';
import { noopMetrics } from '../../lib/observability/metrics.js';
import { beginDurableRecoveryOperation } from '../../lib/recovery/begin-recovery-operation.js';
import { takeOverRecoveryOperation } from '../../lib/recovery/take-over-recovery-operation.js';
import type { Store } from '../../lib/db/store.js';
import type { Observability } from '../../lib/observability/observability.js';
import { waitFor } from '../support/wait-for.js';

/** The dev-token secret of the console suite's stack. */
export const CONSOLE_SECRET = 'console-suite-dev-secret-of-at-least-32-chars';

const quiet: Observability = Object.freeze({ logger: silentLogger, metrics: noopMetrics, middlewares: [] });

/** The real local stack (in-process) with the console served from a private build. */
export interface ConsoleStack {
  readonly stack: LocalStack;
  /** Base URL of the HTTP server the browser talks to: the stack's API handler plus `/console` from `consoleDir`. */
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * Starts `startLocalStack` (SQLite in `dataDir`, DEMO_TASKS=1, short leases and sweeps, in-process queue, worker poller
 * and sweeper), and in front of its runtime a second local HTTP server that serves the console from `consoleDir`. The
 * stack's own server serves the repository's `dist/console`, which `npm start` in another test may be rebuilding at
 * the same moment; this suite builds and serves its own copy instead.
 */
export async function startConsoleStack(dataDir: string, consoleDir: string): Promise<ConsoleStack> {
  const config = loadConfig({
    DATABASE_URL: `sqlite:${dataDir}/console.sqlite`,
    PORT: '0',
    DEMO_TASKS: '1',
    DEV_JWT_SECRET: CONSOLE_SECRET,
    LEASE_SECONDS: '5',
    HEARTBEAT_SECONDS: '1',
    SWEEP_INTERVAL_SECONDS: '1',
    RETRY_BASE_SECONDS: '1',
  });
  const stack = await startLocalStack(config, quiet);
  let server: LocalHttpServer;
  try {
    server = await startLocalHttpServer({ port: 0, handler: createApiHandler(stack.runtime, quiet), devJwtSecret: CONSOLE_SECRET, logger: silentLogger, consoleDir });
  } catch (error) {
    await stack.stop();
    throw error;
  }
  return {
    stack,
    url: server.url,
    stop: async () => {
      await server.close();
      await stack.stop();
    },
  };
}

/** An owner's token for the suite's stack (no scope). */
export function ownerToken(sub: string): Promise<string> {
  return signDevToken(sub, CONSOLE_SECRET);
}

/** An operator's token (`ops:read`, and `ops:write` unless `readOnly`). */
export function operatorToken(sub: string, readOnly = false): Promise<string> {
  return signDevToken(sub, CONSOLE_SECRET, { scope: readOnly ? ['ops:read'] : ['ops:read', 'ops:write'] });
}

/**
 * A valid dev token whose operator scope is only in an `scp` claim, which the console reads (some identity providers
 * use it) but the local server does not: the console believes it is an operator's, the API answers 404 — the case where
 * only the API's answer can tell the console.
 */
export function scpOnlyToken(sub: string): Promise<string> {
  return new SignJWT({ scp: ['ops:read', 'ops:write'] })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(sub)
    .setIssuer(DEV_TOKEN_ISSUER)
    .setAudience(DEV_TOKEN_AUDIENCE)
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(new TextEncoder().encode(CONSOLE_SECRET));
}

/** Admits a demo.wait operation through the owner API; returns its id. */
export async function admitDemoWait(base: string, token: string, idempotencyKey: string, subjectId: string, durationMs: number): Promise<string> {
  const response = await fetch(`${base}/api/operations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
    body: JSON.stringify({ taskType: 'demo.wait', subject: { type: 'demo', id: subjectId }, params: { durationMs } }),
  });
  if (response.status !== 202) throw new Error(`admission answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { id: string }).id;
}

/** Polls the owner API until the operation is in `status`. */
export async function waitForStatus(base: string, token: string, id: string, status: string, timeoutMs = 30_000): Promise<void> {
  await waitFor(
    async () => {
      const response = await fetch(`${base}/api/operations/${id}`, { headers: { authorization: `Bearer ${token}` } });
      return ((await response.json()) as { status: string }).status === status;
    },
    { timeoutMs, intervalMs: 100, what: `operation ${id} to be ${status}` },
  );
}

/**
 * Leaves one durable recovery operation in `outcome_unknown` through the real ledger API: a forward-only effect whose
 * holder vanished (1 s lease), taken over by a reconciler once the lease expired (another 1 s lease, which the operator
 * console's resolution then takes over in turn). Polls the takeover until the database clock has passed the lease.
 * @returns the recovery operation's id.
 */
export async function createOutcomeUnknown(store: Store, idempotencyKey: string): Promise<string> {
  const handle = await beginDurableRecoveryOperation(store, {
    module: 'console.test',
    kind: 'send_message',
    idempotencyKey,
    request: { message: 'wake-up' },
    effectClass: 'forward_only',
    recoveryPlan: { check: 'queue_lookup' },
    preconditionEvidence: { queue: 'wakeups' },
    leaseOwner: 'console-test-sender',
    leaseMs: 1_000,
  });
  await waitFor(() => takeOverRecoveryOperation(store, { operationId: handle.operationId, leaseOwner: 'console-test-reconciler', leaseMs: 1_000 }), {
    timeoutMs: 15_000,
    intervalMs: 200,
    what: 'the recovery lease to expire and the takeover to succeed',
  });
  return handle.operationId;
}
