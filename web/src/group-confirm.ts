// A question asked in place of the buttons that lead to it, for the actions of contract §13 that
// are hard to undo (leaving a group, removing someone, stepping down): no modal, nothing for a
// screen reader to find elsewhere, and the safe answer focused.
import { h } from './dom.ts';

/**
 * Swaps `actions`' buttons for a question, a confirming button and "Cancel" (focused: the safe
 * choice); Cancel (or Escape) puts the buttons and focus back.
 */
let asked = 0;

export function confirmInPlace(
  actions: HTMLElement,
  question: string,
  confirm: string,
  onConfirm: (button: HTMLButtonElement) => void,
): void {
  const before = [...actions.childNodes];
  const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
  // Both answers carry the question, so a screen reader says it with the focused button.
  const id = `confirm-question-${++asked}`;
  const yes = h('button', { type: 'button', class: 'button button-danger', 'aria-describedby': id }, confirm);
  const no = h(
    'button',
    { type: 'button', class: 'button button-secondary', 'aria-describedby': id },
    'Cancel',
  );
  yes.addEventListener('click', () => onConfirm(yes));
  const cancel = () => {
    actions.removeEventListener('keydown', onKey);
    actions.replaceChildren(...before);
    opener?.focus();
  };
  no.addEventListener('click', cancel);
  // Escape answers "no", as it closes a dialog.
  function onKey(event: KeyboardEvent): void {
    if (event.key !== 'Escape' || !actions.contains(no)) return;
    event.preventDefault();
    cancel();
  }
  actions.addEventListener('keydown', onKey);
  actions.replaceChildren(h('p', { class: 'confirm-question', id }, question), yes, no);
  no.focus();
}
