import type { DbContext } from '../db/database.js';
import { canonicalJson, sha256Hex } from '../hashing/request-hash.js';
import { verifyChain, type ChainVerdict } from './hash-chain.js';
import { findRecoveryOperation, listCheckpoints, listRecoveryIds, type RecoveryOperationRow } from './recovery.repository.js';

/**
 * The evidence of a recovery operation's genesis checkpoint: it commits the chain to the operation row's request
 * hash, effect class, module, kind and the SHA-256 digests of its idempotency key, recovery plan and precondition
 * evidence — so editing those columns (e.g. renaming a spent key) breaks verification too.
 */
export function genesisEvidence(
  row: Pick<RecoveryOperationRow, 'idempotency_key' | 'module' | 'kind' | 'request_hash' | 'effect_class' | 'recovery_plan' | 'precondition_evidence'>,
) {
  return {
    keyDigest: `sha256:${sha256Hex(row.idempotency_key)}`,
    module: row.module,
    kind: row.kind,
    requestHash: row.request_hash,
    effectClass: row.effect_class,
    planDigest: `sha256:${sha256Hex(row.recovery_plan)}`,
    preconditionDigest: `sha256:${sha256Hex(row.precondition_evidence)}`,
  };
}

/** Loads an operation and its checkpoints and verifies the whole chain (`verifyChain`). Unknown id → not ok. */
export async function loadVerifiedChain(ctx: DbContext, operationId: string): Promise<ChainVerdict> {
  const row = await findRecoveryOperation(ctx, operationId);
  if (!row) return { ok: false, seq: 0, reason: 'operation not found' };
  const checkpoints = await listCheckpoints(ctx, operationId);
  return verifyChain(
    {
      operationId,
      headHash: row.chain_head_hash,
      count: row.checkpoint_count,
      fence: row.fence,
      state: row.state,
      genesisEvidenceJson: canonicalJson(genesisEvidence(row)),
    },
    checkpoints.map((c) => ({
      operationId: c.operation_id,
      seq: c.seq,
      kind: c.kind,
      state: c.state,
      fence: c.fence,
      previousFence: c.previous_fence,
      evidenceJson: c.evidence,
      prevHash: c.prev_hash,
      hash: c.hash,
    })),
  );
}

/** What {@link verifyAllChains} found. */
export interface ChainReport {
  readonly checked: number;
  readonly broken: ReadonlyArray<{ readonly operationId: string; readonly seq: number; readonly reason: string }>;
}

/**
 * Verifies every recovery operation's chain, in batches of `batchSize` (each operation read on its own), and reports
 * every break. The `recovery verify` CLI command runs it.
 */
export async function verifyAllChains(ctx: DbContext, batchSize = 200): Promise<ChainReport> {
  let checked = 0;
  const broken: Array<{ operationId: string; seq: number; reason: string }> = [];
  for (let after = ''; ; ) {
    const ids = await listRecoveryIds(ctx, after, batchSize);
    for (const id of ids) {
      const verdict = await loadVerifiedChain(ctx, id);
      checked += 1;
      if (!verdict.ok) broken.push({ operationId: id, seq: verdict.seq, reason: verdict.reason });
    }
    if (ids.length < batchSize) return { checked, broken };
    after = ids[ids.length - 1] as string;
  }
}
