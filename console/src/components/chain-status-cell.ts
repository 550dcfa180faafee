import { html } from 'htm/preact';
import type { ChainStatus } from '../api/types.js';

/** Whether a recovery operation's hash chain verified (and why not), with its length. */
export function ChainStatusCell({ chain, checkpoints }: { readonly chain: ChainStatus | undefined; readonly checkpoints: number }) {
  const length = html`<br /><span class="hint">${checkpoints} checkpoint${checkpoints === 1 ? '' : 's'}</span>`;
  if (!chain) return html`<span class="hint">not reported</span>${length}`;
  if (chain.ok) return html`<span class="ok">✓ verified</span>${length}`;
  return html`<span class="bad">✗ broken</span>${chain.reason ? html`: ${chain.reason}` : null}${length}`;
}
