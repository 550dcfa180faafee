import { html } from 'htm/preact';
import { TERMINAL_STATUSES, type OperatorOperation } from '../api/types.js';
import { cancellerText, formatTime, humanize } from '../format/format.js';
import { StatusBadge } from './status-badge.js';

/**
 * What the progress row says: the percent, and the stage the task last reported only while the operation is active — a
 * finished one shows no stage (a succeeded `demo.wait` ends at 100% with its last stage still `waiting`).
 */
const progressText = (op: OperatorOperation) =>
  `${op.progress.percent}%${op.progress.stage && !TERMINAL_STATUSES.includes(op.status) ? ` (${op.progress.stage})` : ''}`;

/**
 * An operation's fields as a description list. Never the failure text (free-form, it may quote a provider's error),
 * and the API never sends a lease token, idempotency key, request hash or params.
 */
export function OperationSummary({ operation: op }: { readonly operation: OperatorOperation }) {
  const rows: Array<[string, unknown]> = [
    ['State', html`<span data-testid="operation-status"><${StatusBadge} status=${op.status} /></span>${op.cancelRequested && op.status === 'running' ? html` <span class="hint">cancel requested</span>` : null}`],
    ['Task type', op.taskType],
    ['Owner', op.ownerUserId],
    ['Subject', `${op.subject.type} / ${op.subject.id}`],
    ['Progress', progressText(op)],
    ['Attempt', `${op.attempt} of ${op.maxAttempts}`],
    ['Owner retries used', op.retryCount],
    ...(op.cancelRequested ? [['Cancel requested by', html`<span data-testid="cancel-requested-by">${cancellerText(op.cancelRequestedBy)}</span>`] as [string, unknown]] : []),
    ['Failure', op.failure ? html`<code>${op.failure.code}</code>` : '–'],
    ['Privacy mode', humanize(op.privacyMode)],
    ['Created', formatTime(op.createdAt)],
    ['Started', formatTime(op.startedAt)],
    ['Finished', formatTime(op.finishedAt)],
    ['Next attempt', formatTime(op.nextAttemptAt)],
    ['Deadline', formatTime(op.deadlineAt)],
    ['Lease expires', formatTime(op.leaseExpiresAt)],
    ['Last heartbeat', formatTime(op.heartbeatAt)],
  ];
  return html`
    <dl class="summary">
      ${rows.map(([term, value]) => html`<div><dt>${term}</dt><dd>${value}</dd></div>`)}
    </dl>
  `;
}
