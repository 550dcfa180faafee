import { html } from 'htm/preact';
import { getOperation } from '../api/operator-api.js';
import { TERMINAL_STATUSES, type OperationDetail } from '../api/types.js';
import { useResource } from '../hooks/use-resource.js';
import { consolePath } from '../routing/routes.js';
import { AppLink } from './app-link.js';
import { ModelAttemptsTable } from './model-attempts-table.js';
import { NotificationsTable } from './notifications-table.js';
import { OperationActions } from './operation-actions.js';
import { OperationSummary } from './operation-summary.js';
import type { PageProps } from './page-view.js';
import { ProblemAlert } from './problem-alert.js';
import { TimelineList } from './timeline-list.js';

/** Refresh period of an operation that can still change, in **ms**. */
const LIVE_REFRESH_MS = 1500;

const isLive = (detail: OperationDetail | undefined) =>
  detail !== undefined && !TERMINAL_STATUSES.includes(detail.operation.status);

/** One operation: its state, actions, timeline, notifications and model calls; refreshed while it can still change. */
export function OperationPage({ api, canWrite, id }: PageProps & { readonly id: string }) {
  const detail = useResource(`operation:${id}`, () => getOperation(api, id), { refreshMs: LIVE_REFRESH_MS, shouldRefresh: isLive });
  const data = detail.data;
  return html`
    <p><${AppLink} href=${consolePath('operations')}>← All operations</${AppLink}></p>
    <h1>Operation <code>${id}</code></h1>
    <${ProblemAlert} problem=${detail.problem} context="Loading the operation" />
    ${detail.loading && !data && html`<p role="status">Loading…</p>`}
    ${data &&
    html`
      <${OperationSummary} operation=${data.operation} />
      ${canWrite && html`<${OperationActions} api=${api} operation=${data.operation} onChanged=${detail.reload} />`}
      <section aria-labelledby="timeline-heading">
        <h2 id="timeline-heading">Timeline</h2>
        <${TimelineList} events=${data.timeline} />
      </section>
      <section aria-labelledby="notifications-heading">
        <h2 id="notifications-heading">Notifications</h2>
        <${NotificationsTable} notifications=${data.notifications} />
      </section>
      ${data.operation.modelAttempts.length > 0 &&
      html`<section aria-labelledby="models-heading">
        <h2 id="models-heading">Model calls</h2>
        <${ModelAttemptsTable} attempts=${data.operation.modelAttempts} />
      </section>`}
    `}
  `;
}
