import { canonicalJson, sha256Hex } from '../hashing/request-hash.js';

/** The `prev_hash` of checkpoint 0. */
export const GENESIS_PREV_HASH = '0'.repeat(64);

/** The fields a checkpoint's hash covers. `evidenceJson` is the canonical JSON stored in the row. */
export interface CheckpointContent {
  readonly operationId: string;
  readonly seq: number;
  readonly kind: string;
  readonly state: string;
  readonly fence: number;
  readonly previousFence: number | null;
  readonly evidenceJson: string;
  readonly prevHash: string;
}

/**
 * SHA-256 (hex) of a checkpoint: `sha256(JCS({v: 1, operationId, seq, kind, state, fence, previousFence, evidence,
 * prevHash}))`, JCS being RFC 8785 canonical JSON. Because each hash covers the previous one, changing, removing or
 * reordering any checkpoint changes every hash after it. `created_at` is not covered (it is set by the database).
 */
export function checkpointHash(content: CheckpointContent): string {
  return sha256Hex(
    canonicalJson({
      v: 1,
      operationId: content.operationId,
      seq: content.seq,
      kind: content.kind,
      state: content.state,
      fence: content.fence,
      previousFence: content.previousFence,
      evidence: JSON.parse(content.evidenceJson) as unknown,
      prevHash: content.prevHash,
    }),
  );
}

/** A checkpoint as stored, for verification. */
export interface StoredCheckpoint extends CheckpointContent {
  readonly hash: string;
}

/** The outcome of {@link verifyChain}: ok, or the first checkpoint that fails and why. */
export type ChainVerdict = { readonly ok: true } | { readonly ok: false; readonly seq: number; readonly reason: string };

/** What the operation row claims about its chain (and what the genesis checkpoint must commit to). */
export interface ChainAnchor {
  readonly operationId: string;
  readonly headHash: string;
  readonly count: number;
  readonly state: string;
  /** The row's fence: the last checkpoint was written under it. */
  readonly fence: number;
  /** The genesis evidence the operation row implies (request hash, effect class, plan and precondition digests). */
  readonly genesisEvidenceJson: string;
}

/**
 * Verifies a whole chain: contiguous sequence from 0, each `prev_hash` equal to the previous `hash` (genesis: 64
 * zeros), each `hash` recomputed, the genesis evidence matching the operation row, and the row's head hash, count and
 * state matching the last checkpoint. Pure: give it the rows in `seq` order.
 */
export function verifyChain(anchor: ChainAnchor, checkpoints: readonly StoredCheckpoint[]): ChainVerdict {
  let prevHash = GENESIS_PREV_HASH;
  for (let i = 0; i < checkpoints.length; i++) {
    const c = checkpoints[i] as StoredCheckpoint;
    if (c.seq !== i) return { ok: false, seq: i, reason: 'sequence gap or reorder' };
    if (c.operationId !== anchor.operationId) return { ok: false, seq: i, reason: 'checkpoint of another operation' };
    if (c.prevHash !== prevHash) return { ok: false, seq: i, reason: 'previous hash does not match' };
    let recomputed: string;
    try {
      recomputed = checkpointHash(c);
    } catch {
      return { ok: false, seq: i, reason: 'evidence is not JSON' };
    }
    if (recomputed !== c.hash) return { ok: false, seq: i, reason: 'hash does not match content' };
    if (i === 0 && c.evidenceJson !== anchor.genesisEvidenceJson) return { ok: false, seq: 0, reason: 'genesis does not match the operation' };
    if (i > 0 && c.fence < (checkpoints[i - 1] as StoredCheckpoint).fence) return { ok: false, seq: i, reason: 'fence went backwards' };
    prevHash = c.hash;
  }
  const last = checkpoints[checkpoints.length - 1];
  if (!last || checkpoints.length !== anchor.count) return { ok: false, seq: checkpoints.length, reason: 'checkpoint count does not match' };
  if (last.hash !== anchor.headHash) return { ok: false, seq: last.seq, reason: 'head hash does not match' };
  if (last.state !== anchor.state) return { ok: false, seq: last.seq, reason: 'state does not match the last checkpoint' };
  if (last.fence !== anchor.fence) return { ok: false, seq: last.seq, reason: 'fence does not match the last checkpoint' };
  return { ok: true };
}
