import { html } from 'htm/preact';
import type { ApiClient } from '../api/api-client.js';
import type { Route } from '../routing/routes.js';
import { CapacityPage } from './capacity-page.js';
import { OperationPage } from './operation-page.js';
import { OperationsPage } from './operations-page.js';
import { RecoveryPage } from './recovery-page.js';
import { SweeperPage } from './sweeper-page.js';
import { ThroughputPage } from './throughput-page.js';

/** Props of {@link PageView} and of every page. */
export interface PageProps {
  readonly api: ApiClient;
  /** The token holds `ops:write`: actions are offered. */
  readonly canWrite: boolean;
}

/** The page of `route`. */
export function PageView({ route, api, canWrite }: PageProps & { readonly route: Route }) {
  switch (route.page) {
    case 'operations':
      return html`<${OperationsPage} api=${api} canWrite=${canWrite} query=${route.query} />`;
    case 'operation':
      return html`<${OperationPage} key=${route.id} api=${api} canWrite=${canWrite} id=${route.id} />`;
    case 'capacity':
      return html`<${CapacityPage} api=${api} canWrite=${canWrite} />`;
    case 'recovery':
      return html`<${RecoveryPage} api=${api} canWrite=${canWrite} />`;
    case 'sweeper':
      return html`<${SweeperPage} api=${api} canWrite=${canWrite} />`;
    case 'throughput':
      return html`<${ThroughputPage} api=${api} canWrite=${canWrite} />`;
    case 'not-found':
      return html`<h1>Page not found</h1><p>The console has no page at this address.</p>`;
  }
}
