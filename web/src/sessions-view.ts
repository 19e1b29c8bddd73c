// contract §9: "Where you're signed in" — one card per session (device from its user agent, IP,
// when), "This device" on the current one, a Sign out button each, and "Sign out everywhere". The
// buttons name their session for screen readers; the page holds no state (app.ts acts).
import type { SessionInfo } from './api.ts';
import { h } from './dom.ts';
import { deviceLabel, signInMethodLabel, whenText } from './text.ts';
import { pageHeading } from './views.ts';

export interface SessionActions {
  /** Ends one session; the button is disabled while the request is out. */
  readonly end: (session: SessionInfo, label: string, button: HTMLButtonElement) => void;
  readonly endAll: (button: HTMLButtonElement) => void;
}

/** The page; `status` is a sentence to announce at its top (the outcome of the last action). */
export function sessionsPage(
  sessions: readonly SessionInfo[],
  actions: SessionActions,
  status?: string,
): Node[] {
  const count =
    sessions.length === 1
      ? 'You are signed in on 1 device.'
      : `You are signed in on ${sessions.length} devices.`;
  const everywhere = h('button', { type: 'button', class: 'button button-danger' }, 'Sign out everywhere');
  everywhere.addEventListener('click', () => actions.endAll(everywhere));
  return [
    pageHeading('Where you’re signed in'),
    h('p', { class: 'notice', role: 'status', id: 'sessions-status' }, status ?? ''),
    h('p', { class: 'lead' }, count),
    h(
      'ul',
      { class: 'session-list', role: 'list' },
      ...sessions.map((session) => sessionCard(session, actions)),
    ),
    h(
      'div',
      { class: 'card session-everywhere' },
      h(
        'p',
        {},
        'Lost a device, or signed in somewhere you should not have? End every session, this one included.',
      ),
      everywhere,
    ),
  ];
}

function sessionCard(session: SessionInfo, actions: SessionActions): HTMLElement {
  const device = deviceLabel(session.user_agent);
  const created = whenText(session.created);
  const button = h(
    'button',
    {
      type: 'button',
      class: 'button button-secondary',
      'aria-label': `Sign out ${device}${session.current ? ' (this device)' : ''}, signed in ${created}`,
    },
    'Sign out',
  );
  button.addEventListener('click', () => actions.end(session, device, button));
  return h(
    'li',
    { class: `card session-card${session.current ? ' session-current' : ''}` },
    h(
      'div',
      { class: 'session-head' },
      h('h2', { class: 'session-device' }, device),
      session.current ? h('span', { class: 'badge badge-current' }, 'This device') : null,
    ),
    h(
      'dl',
      { class: 'session-facts' },
      h('dt', {}, 'IP address'),
      h('dd', {}, session.ip ?? 'Not known'),
      h('dt', {}, 'Signed in'),
      h('dd', {}, h('time', { datetime: session.created }, created)),
      h('dt', {}, 'Last active'),
      h('dd', {}, h('time', { datetime: session.last_seen }, whenText(session.last_seen))),
      // contract §9 with §12: how it signed in (a server before passkeys does not say).
      session.method === undefined ? null : h('dt', {}, 'Signed in with'),
      session.method === undefined ? null : h('dd', {}, signInMethodLabel(session.method)),
    ),
    button,
  );
}
