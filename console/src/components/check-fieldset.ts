import { html } from 'htm/preact';
import { useId } from 'preact/hooks';
import type { CheckDraft, EvidenceFieldDraft, EvidenceValueType } from '../recovery/resolution-draft.js';

/** Props of {@link CheckFieldset}. */
export interface CheckFieldsetProps {
  readonly index: number;
  readonly check: CheckDraft;
  readonly removable: boolean;
  /** The changed check, or undefined to remove it. */
  readonly onChange: (check: CheckDraft | undefined) => void;
}

const inputValue = (event: Event) => (event.currentTarget as HTMLInputElement | HTMLSelectElement).value;

/** One verification check of the evidence form: its name and its evidence fields (key, type, value). */
export function CheckFieldset({ index, check, removable, onChange }: CheckFieldsetProps) {
  const nameId = useId();
  const fieldId = useId();
  const number = index + 1;
  const setField = (at: number, field: EvidenceFieldDraft | undefined) =>
    onChange({ ...check, fields: field === undefined ? check.fields.filter((_, i) => i !== at) : check.fields.map((f, i) => (i === at ? field : f)) });
  return html`
    <fieldset class="check">
      <legend>Check ${number}</legend>
      <div>
        <label for=${nameId}>Check name</label>
        <input id=${nameId} value=${check.name} onInput=${(e: Event) => onChange({ ...check, name: inputValue(e) })} placeholder="e.g. provider_lookup" autocomplete="off" />
      </div>
      ${check.fields.map(
        (field, at) => html`
          <div class="evidence-field" key=${at}>
            <div>
              <label for=${`${fieldId}-key-${at}`}>Evidence key ${at + 1}</label>
              <input id=${`${fieldId}-key-${at}`} value=${field.key} onInput=${(e: Event) => setField(at, { ...field, key: inputValue(e) })} placeholder="e.g. providerStatus" autocomplete="off" />
            </div>
            <div>
              <label for=${`${fieldId}-type-${at}`}>Type</label>
              <select id=${`${fieldId}-type-${at}`} value=${field.type} onChange=${(e: Event) => setField(at, { ...field, type: inputValue(e) as EvidenceValueType, value: inputValue(e) === 'boolean' ? 'true' : field.value })}>
                <option value="text">text</option>
                <option value="number">number</option>
                <option value="boolean">true / false</option>
              </select>
            </div>
            <div>
              <label for=${`${fieldId}-value-${at}`}>Value</label>
              ${field.type === 'boolean'
                ? html`<select id=${`${fieldId}-value-${at}`} value=${field.value} onChange=${(e: Event) => setField(at, { ...field, value: inputValue(e) })}>
                    <option value="true">true</option>
                    <option value="false">false</option>
                  </select>`
                : html`<input id=${`${fieldId}-value-${at}`} value=${field.value} inputmode=${field.type === 'number' ? 'decimal' : undefined} onInput=${(e: Event) => setField(at, { ...field, value: inputValue(e) })} placeholder=${field.type === 'number' ? '0' : 'e.g. HTTP_200'} autocomplete="off" />`}
            </div>
            <button type="button" class="small" aria-label=${`Remove evidence field ${at + 1} of check ${number}`} disabled=${check.fields.length === 1} onClick=${() => setField(at, undefined)}>Remove</button>
          </div>
        `,
      )}
      <div class="buttons">
        <button type="button" class="small" onClick=${() => onChange({ ...check, fields: [...check.fields, { key: '', type: 'text', value: '' }] })}>Add evidence field</button>
        ${removable && html`<button type="button" class="small" onClick=${() => onChange(undefined)}>Remove check ${number}</button>`}
      </div>
    </fieldset>
  `;
}
