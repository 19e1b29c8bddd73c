// A question asked in place of the buttons that lead to it, for the actions of contract §13 that
// are hard to undo (leaving a group, removing someone, stepping down): no modal, nothing for a
// screen reader to find elsewhere, and the safe answer focused.
import { h } from './dom.ts';

/**
 * Swaps `actions`' buttons for a question, a confirming button and "Cancel" (focused: the safe
 * choice); Cancel puts the buttons and focus back.
 */
export function confirmInPlace(
  actions: HTMLElement,
  question: string,
  confirm: string,
  onConfirm: (button: HTMLButtonElement) => void,
): void {
  const before = [...actions.childNodes];
  const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
  const yes = h('button', { type: 'button', class: 'button button-danger' }, confirm);
  const no = h('button', { type: 'button', class: 'button button-secondary' }, 'Cancel');
  yes.addEventListener('click', () => onConfirm(yes));
  no.addEventListener('click', () => {
    actions.replaceChildren(...before);
    opener?.focus();
  });
  actions.replaceChildren(h('p', { class: 'confirm-question' }, question), yes, no);
  no.focus();
}
