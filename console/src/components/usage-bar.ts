import { html } from 'htm/preact';
import { useId } from 'preact/hooks';

/** Props of {@link UsageBar}. */
export interface UsageBarProps {
  readonly label: string;
  readonly used: number;
  readonly total: number;
}

/**
 * How full a pool is: a native `<meter>` (announced as a value by screen readers, coloured by the browser as it fills:
 * high from 80 %, full at 100 %) and the numbers as text.
 */
export function UsageBar({ label, used, total }: UsageBarProps) {
  const id = useId();
  const max = Math.max(total, 1);
  return html`
    <div class="usage">
      <label for=${id}><code>${label}</code></label>
      <meter id=${id} min="0" max=${max} low=${max * 0.5} high=${max * 0.8} optimum="0" value=${Math.min(used, max)}>${used} of ${total}</meter>
      <span class="number">${used} / ${total}</span>
    </div>
  `;
}
