import { html } from 'htm/preact';
import type { Problem } from '../api/problem.js';

/** Props of {@link ProblemAlert}. */
export interface ProblemAlertProps {
  readonly problem: Problem | undefined;
  /** What failed, e.g. "Loading operations". */
  readonly context?: string;
}

/**
 * Shows a failed request as an alert: the problem's title and HTTP status, its detail, its code and, for a 400, the
 * field errors. Renders nothing without a problem.
 */
export function ProblemAlert({ problem, context }: ProblemAlertProps) {
  if (!problem) return null;
  return html`
    <div class="problem" role="alert">
      <p class="problem-title">
        ${context ? `${context} failed: ` : ''}<strong>${problem.title}</strong>${problem.status > 0 ? ` (HTTP ${problem.status})` : ''}
      </p>
      <p>${problem.detail} <code>${problem.code}</code></p>
      ${problem.errors.length > 0 &&
      html`<ul>
        ${problem.errors.map((issue) => html`<li><code>${issue.path}</code> ${issue.message}</li>`)}
      </ul>`}
    </div>
  `;
}
