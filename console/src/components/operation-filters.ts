import { html } from 'htm/preact';
import { useEffect, useId, useState } from 'preact/hooks';
import type { OperationFilters } from '../api/operator-api.js';
import { OPERATION_STATUSES } from '../api/types.js';
import { humanize } from '../format/format.js';

/** Props of {@link OperationFiltersForm}. */
export interface OperationFiltersFormProps {
  /** The filters applied now (without the cursor). */
  readonly filters: OperationFilters;
  /** Applies new filters (from the first page). */
  readonly onApply: (filters: OperationFilters) => void;
}

/** The operation list's filters: state, task type and owner; applied on submit, cleared with one button. */
export function OperationFiltersForm({ filters, onApply }: OperationFiltersFormProps) {
  const [status, setStatus] = useState(filters.status ?? '');
  const [taskType, setTaskType] = useState(filters.taskType ?? '');
  const [owner, setOwner] = useState(filters.ownerUserId ?? '');
  useEffect(() => {
    setStatus(filters.status ?? '');
    setTaskType(filters.taskType ?? '');
    setOwner(filters.ownerUserId ?? '');
  }, [filters.status, filters.taskType, filters.ownerUserId]);
  const ids = { status: useId(), taskType: useId(), owner: useId() };
  const value = (set: (v: string) => void) => (event: Event) => set((event.currentTarget as HTMLInputElement | HTMLSelectElement).value);
  const onSubmit = (event: Event) => {
    event.preventDefault();
    onApply({ status: status || undefined, taskType: taskType.trim() || undefined, ownerUserId: owner.trim() || undefined });
  };
  return html`
    <form class="filters" role="search" aria-label="Filter operations" onSubmit=${onSubmit}>
      <div>
        <label for=${ids.status}>State</label>
        <select id=${ids.status} value=${status} onChange=${value(setStatus)}>
          <option value="">any state</option>
          ${OPERATION_STATUSES.map((s) => html`<option value=${s}>${humanize(s)}</option>`)}
        </select>
      </div>
      <div>
        <label for=${ids.taskType}>Task type</label>
        <input id=${ids.taskType} value=${taskType} onInput=${value(setTaskType)} placeholder="e.g. demo.wait" autocomplete="off" />
      </div>
      <div>
        <label for=${ids.owner}>Owner</label>
        <input id=${ids.owner} value=${owner} onInput=${value(setOwner)} placeholder="owner's sub" autocomplete="off" />
      </div>
      <div class="buttons">
        <button type="submit">Apply filters</button>
        <button type="button" onClick=${() => onApply({})}>Clear</button>
      </div>
    </form>
  `;
}
