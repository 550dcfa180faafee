import { html } from 'htm/preact';
import { useId, useState } from 'preact/hooks';
import type { ApiClient } from '../api/api-client.js';
import { resolveUnknown } from '../api/operator-api.js';
import type { RecoveryItem } from '../api/types.js';
import { useConfirmedAction } from '../hooks/use-confirmed-action.js';
import { emptyDraft, validateDraft, type CheckDraft, type ResolutionDraft } from '../recovery/resolution-draft.js';
import { CheckFieldset } from './check-fieldset.js';
import { ConfirmDialog } from './confirm-dialog.js';
import { ProblemAlert } from './problem-alert.js';

/** Props of {@link ResolveUnknownForm}. */
export interface ResolveUnknownFormProps {
  readonly api: ApiClient;
  readonly item: RecoveryItem;
  /** Called with the operation's new state after the API recorded the resolution. */
  readonly onResolved: (state: string) => void;
  readonly onClose: () => void;
}

/**
 * Resolves an `outcome_unknown` recovery operation: did the effect happen, and which checks (each with evidence:
 * references, digests, counts, result codes — never credentials) show it. Validated with the library's zod schema
 * before the confirmation; the API takes the operation over as `operator:<you>` and records the evidence in its chain.
 */
export function ResolveUnknownForm({ api, item, onResolved, onClose }: ResolveUnknownFormProps) {
  const [draft, setDraft] = useState<ResolutionDraft>(emptyDraft);
  const [issues, setIssues] = useState<readonly string[]>([]);
  const [body, setBody] = useState<unknown>(undefined);
  const headingId = useId();
  const action = useConfirmedAction(async () => {
    const { state } = await resolveUnknown(api, item.id, body);
    onResolved(state);
    return `Resolved: now ${state}.`;
  });

  const setCheck = (index: number, check: CheckDraft | undefined) =>
    setDraft((d) => ({ ...d, checks: check === undefined ? d.checks.filter((_, i) => i !== index) : d.checks.map((c, i) => (i === index ? check : c)) }));
  const onSubmit = (event: Event) => {
    event.preventDefault();
    const result = validateDraft(draft);
    setIssues(result.ok ? [] : result.issues);
    if (result.ok) {
      setBody(result.resolution);
      action.ask();
    }
  };
  const radio = (value: 'yes' | 'no', label: string) => html`
    <label class="choice">
      <input type="radio" name=${`occurred-${item.id}`} value=${value} checked=${draft.occurred === value} onChange=${() => setDraft((d) => ({ ...d, occurred: value }))} />
      ${label}
    </label>
  `;
  return html`
    <form class="resolve" aria-labelledby=${headingId} onSubmit=${onSubmit} novalidate>
      <h3 id=${headingId}>Resolve <code>${item.id}</code></h3>
      <fieldset>
        <legend>Did the effect happen?</legend>
        ${radio('yes', 'Yes: it happened (the operation becomes succeeded)')}
        ${radio('no', 'No: it did not happen (the operation becomes verified recovered)')}
      </fieldset>
      ${draft.checks.map(
        (check, index) => html`<${CheckFieldset}
          key=${index}
          index=${index}
          check=${check}
          removable=${draft.checks.length > 1}
          onChange=${(next: CheckDraft | undefined) => setCheck(index, next)}
        />`,
      )}
      <div class="buttons">
        <button type="button" onClick=${() => setDraft((d) => ({ ...d, checks: [...d.checks, { name: '', fields: [{ key: '', type: 'text', value: '' }] }] }))}>
          Add a check
        </button>
        <button type="submit">Check and resolve…</button>
        <button type="button" onClick=${onClose}>Close</button>
      </div>
      ${issues.length > 0 &&
      html`<div class="problem" role="alert">
        <p class="problem-title"><strong>The evidence is not valid yet</strong></p>
        <ul>${issues.map((issue) => html`<li>${issue}</li>`)}</ul>
      </div>`}
      <${ProblemAlert} problem=${action.problem} context="Resolving" />
      ${action.confirming &&
      html`<${ConfirmDialog}
        title="Resolve this recovery operation?"
        confirmLabel="Yes, resolve it"
        busy=${action.running}
        onConfirm=${action.confirm}
        onClose=${action.dismiss}
      >
        <p>
          You record, for ever, in its hash chain that the effect <strong>${draft.occurred === 'yes' ? 'happened' : 'did not happen'}</strong>, with
          ${draft.checks.length} check${draft.checks.length === 1 ? '' : 's'} of evidence. This cannot be undone.
        </p>
      </${ConfirmDialog}>`}
    </form>
  `;
}
