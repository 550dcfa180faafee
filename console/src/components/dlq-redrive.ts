import { html } from 'htm/preact';
import type { ApiClient } from '../api/api-client.js';
import { redriveDlq } from '../api/operator-api.js';
import { useConfirmedAction } from '../hooks/use-confirmed-action.js';
import { ConfirmDialog } from './confirm-dialog.js';
import { ProblemAlert } from './problem-alert.js';

/** Moves the dead-letter queue's messages back to the work queue, after a confirmation; reports how many moved. */
export function DlqRedrive({ api }: { readonly api: ApiClient }) {
  const redrive = useConfirmedAction(async () => {
    const { moved, skipped, rejected } = await redriveDlq(api);
    if (moved + skipped + rejected === 0) return 'The dead-letter queue was empty: nothing moved.';
    const plural = (n: number) => `${n} dead letter${n === 1 ? '' : 's'}`;
    return [
      `Moved ${plural(moved)} back to the queue.`,
      skipped > 0 ? `${plural(skipped)} stayed: already redriven once (reconcile them on the Recovery page).` : '',
      rejected > 0 ? `${plural(rejected)} refused by the queue.` : '',
    ].filter(Boolean).join(' ');
  });
  return html`
    <section class="card" aria-labelledby="dlq-heading">
      <h2 id="dlq-heading">Dead-letter queue</h2>
      <p class="hint">Wake-up messages that failed delivery too often. Redriving sends each back once (recorded in the recovery ledger); the operations themselves live in the database and are never lost.</p>
      <button type="button" onClick=${redrive.ask}>Redrive the DLQ</button>
      ${redrive.message && html`<p class="notice" role="status">${redrive.message}</p>`}
      <${ProblemAlert} problem=${redrive.problem} context="Redrive" />
      ${redrive.confirming &&
      html`<${ConfirmDialog} title="Redrive the dead-letter queue?" confirmLabel="Yes, redrive" busy=${redrive.running} onConfirm=${redrive.confirm} onClose=${redrive.dismiss}>
        <p>Up to 100 messages of the DLQ go back to the work queue, each at most once.</p>
      </${ConfirmDialog}>`}
    </section>
  `;
}
