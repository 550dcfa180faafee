import { html } from 'htm/preact';
import type { OperatorOperation } from '../api/types.js';
import { formatTime, humanize } from '../format/format.js';
import { StatusBadge } from './status-badge.js';

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
    ['Progress', `${op.progress.percent}%${op.progress.stage ? ` (${op.progress.stage})` : ''}`],
    ['Attempt', `${op.attempt} of ${op.maxAttempts}`],
    ['Owner retries used', op.retryCount],
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
