import { html } from 'htm/preact';
import type { ModelAttempt } from '../api/types.js';

/** An operation's model calls (provenance): attempt, route, provider, model and outcome. */
export function ModelAttemptsTable({ attempts }: { readonly attempts: readonly ModelAttempt[] }) {
  return html`
    <table>
      <thead><tr><th scope="col">Attempt</th><th scope="col">Route</th><th scope="col">Provider</th><th scope="col">Model</th><th scope="col">Outcome</th></tr></thead>
      <tbody>
        ${attempts.map(
          (a, index) => html`<tr key=${index}>
            <td class="number">${a.attempt}</td><td>${a.route}</td><td>${a.provider}</td><td>${a.model}</td><td><code>${a.outcome}</code></td>
          </tr>`,
        )}
      </tbody>
    </table>
  `;
}
