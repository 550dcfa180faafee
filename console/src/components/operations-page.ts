import { html } from 'htm/preact';
import { listOperations, type OperationFilters } from '../api/operator-api.js';
import { useResource } from '../hooks/use-resource.js';
import { navigate } from '../routing/navigation.js';
import { consolePath } from '../routing/routes.js';
import { OperationFiltersForm } from './operation-filters.js';
import { OperationsTable } from './operations-table.js';
import type { PageProps } from './page-view.js';
import { Pager } from './pager.js';
import { ProblemAlert } from './problem-alert.js';

/** Page size of the operation list. */
const PAGE_SIZE = 25;

/** The filters in the URL (`?status=&taskType=&ownerUserId=&cursor=`), so a filtered page can be reloaded or shared. */
function filtersOf(query: URLSearchParams): OperationFilters {
  const value = (name: string) => query.get(name)?.trim() || undefined;
  return { status: value('status'), taskType: value('taskType'), ownerUserId: value('ownerUserId'), cursor: value('cursor') };
}

function hrefOf(filters: OperationFilters): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(filters)) if (value) params.set(name, String(value));
  const search = params.toString();
  return `${consolePath('operations')}${search ? `?${search}` : ''}`;
}

/** Every owner's operations, newest first, filtered by state, task type and owner, a cursor page at a time. */
export function OperationsPage({ api, query }: PageProps & { readonly query: URLSearchParams }) {
  const filters = filtersOf(query);
  const list = useResource(hrefOf(filters), () => listOperations(api, { ...filters, limit: PAGE_SIZE }), { refreshMs: 5000 });
  const { cursor, ...applied } = filters;
  return html`
    <h1>Operations</h1>
    <${OperationFiltersForm} filters=${applied} onApply=${(next: OperationFilters) => navigate(hrefOf(next))} />
    <${ProblemAlert} problem=${list.problem} context="Loading operations" />
    ${list.data && html`<${OperationsTable} operations=${list.data.items} />`}
    ${list.loading && !list.data && html`<p role="status">Loading operations…</p>`}
    <${Pager}
      firstHref=${cursor ? hrefOf(applied) : undefined}
      nextHref=${list.data?.nextCursor ? hrefOf({ ...applied, cursor: list.data.nextCursor }) : undefined}
    />
  `;
}
