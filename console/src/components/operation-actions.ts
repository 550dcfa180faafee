import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import type { ApiClient } from '../api/api-client.js';
import { cancelOperation, retryOperation } from '../api/operator-api.js';
import { TERMINAL_STATUSES, type OperatorOperation } from '../api/types.js';
import { humanize } from '../format/format.js';
import { useConfirmedAction } from '../hooks/use-confirmed-action.js';
import { ConfirmDialog } from './confirm-dialog.js';
import { ProblemAlert } from './problem-alert.js';

/** Props of {@link OperationActions}. */
export interface OperationActionsProps {
  readonly api: ApiClient;
  readonly operation: OperatorOperation;
  /** Reloads the operation after an action. */
  readonly onChanged: () => void;
}

/**
 * A notice after an action. `untilFinished`: it describes something still under way (a cancel the worker has not seen
 * yet), so it is shown only while the operation is not finished.
 */
interface Notice {
  readonly text: string;
  readonly untilFinished: boolean;
}

/** What a cancel did: a waiting operation is cancelled at once, a running one is asked to stop. */
const cancelled = (op: OperatorOperation): Notice =>
  op.status === 'cancelled'
    ? { text: 'Cancelled: the operation is now cancelled.', untilFinished: false }
    : { text: `Cancel requested while it was ${humanize(op.status)}: it stops at its next heartbeat.`, untilFinished: true };

/** What a retry did. */
const retried = (op: OperatorOperation): Notice => ({ text: `Retried: the operation is now ${humanize(op.status)}.`, untilFinished: false });

/**
 * Cancel and retry, each confirmed first: exactly the owner's commands, on the owner's behalf. Cancel is offered while
 * the operation is not finished and no cancel is pending; retry once it failed or was cancelled.
 */
export function OperationActions({ api, operation, onChanged }: OperationActionsProps) {
  const [notice, setNotice] = useState<Notice | undefined>(undefined);
  const done = (next: Notice) => {
    setNotice(next);
    onChanged();
  };
  // "Cancel requested…" is out of date once the reloaded operation is finished (cancelled, or succeeded first).
  const shown = notice && !(notice.untilFinished && TERMINAL_STATUSES.includes(operation.status)) ? notice.text : undefined;
  const cancel = useConfirmedAction(async () => cancelled(await cancelOperation(api, operation.id)), done);
  const retry = useConfirmedAction(async () => retried(await retryOperation(api, operation.id)), done);
  const canCancel = !TERMINAL_STATUSES.includes(operation.status) && !operation.cancelRequested;
  const canRetry = operation.status === 'failed' || operation.status === 'cancelled';
  return html`
    <section class="actions" aria-label="Actions">
      <div class="buttons">
        ${canCancel && html`<button type="button" class="danger" onClick=${cancel.ask}>Cancel operation</button>`}
        ${canRetry && html`<button type="button" onClick=${retry.ask}>Retry operation</button>`}
        ${!canCancel && !canRetry && html`<span class="hint">No action applies to this operation now.</span>`}
      </div>
      ${shown && html`<p class="notice" role="status">${shown}</p>`}
      <${ProblemAlert} problem=${cancel.problem} context="Cancel" />
      <${ProblemAlert} problem=${retry.problem} context="Retry" />
      ${cancel.confirming &&
      html`<${ConfirmDialog} title="Cancel this operation?" confirmLabel="Yes, cancel it" busy=${cancel.running} onConfirm=${cancel.confirm} onClose=${cancel.dismiss}>
        <p>A waiting operation is cancelled at once; a running one stops at its next heartbeat. Its owner (<strong>${operation.ownerUserId}</strong>) is notified.</p>
      </${ConfirmDialog}>`}
      ${retry.confirming &&
      html`<${ConfirmDialog} title="Retry this operation?" confirmLabel="Yes, retry it" busy=${retry.running} onConfirm=${retry.confirm} onClose=${retry.dismiss}>
        <p>It is queued again with a fresh attempt budget, counting as one of its owner's retries.</p>
      </${ConfirmDialog}>`}
    </section>
  `;
}
