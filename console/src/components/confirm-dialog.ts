import type { ComponentChildren } from 'preact';
import { html } from 'htm/preact';
import { useEffect, useId, useRef } from 'preact/hooks';

/** Props of {@link ConfirmDialog}. */
export interface ConfirmDialogProps {
  readonly title: string;
  /** The confirming button's text: says what happens, e.g. "Yes, cancel it". */
  readonly confirmLabel: string;
  readonly busy: boolean;
  readonly onConfirm: () => void;
  /** Called for "Go back", Escape, or when the dialog closes otherwise. */
  readonly onClose: () => void;
  readonly children: ComponentChildren;
}

/**
 * A modal confirmation before an action runs: a native `<dialog>` opened with `showModal()` (focus moves into it,
 * the page behind is inert, Escape closes it). Mount it only while the confirmation is pending.
 */
export function ConfirmDialog({ title, confirmLabel, busy, onConfirm, onClose, children }: ConfirmDialogProps) {
  const dialog = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const element = dialog.current;
    if (element && !element.open) element.showModal();
    return () => element?.close();
  }, []);
  const onCancel = (event: Event) => {
    event.preventDefault();
    if (!busy) onClose();
  };
  return html`
    <dialog ref=${dialog} class="confirm" aria-labelledby=${titleId} onCancel=${onCancel}>
      <h2 id=${titleId}>${title}</h2>
      <div class="confirm-body">${children}</div>
      <div class="buttons">
        <button type="button" onClick=${onClose} disabled=${busy}>Go back</button>
        <button type="button" class="danger" onClick=${onConfirm} disabled=${busy} aria-busy=${busy}>${busy ? 'Working…' : confirmLabel}</button>
      </div>
    </dialog>
  `;
}
