// contract §12: the "Passkeys" page beside "Where you're signed in": create a passkey, the list (each
// renamed or deleted by buttons that name it for screen readers), and the switch that turns password
// sign-in off. The page holds no state; app.ts acts and paints it again with the outcome, said in the
// status line (a live region) or, when the server wants a recent sign-in, in the alert with a button.
import type { PasskeyInfo, PasskeySettings } from './api.ts';
import { h } from './dom.ts';
import { deviceLabel, whenText } from './text.ts';
import { pageHeading } from './views.ts';

/** The longest name the form takes (the server checks its own limit and says so). */
const NAME_MAX = 100;

export interface PasskeyActions {
  /** Creates a passkey named `name`; the button is disabled while the ceremony runs. */
  readonly create: (name: string, button: HTMLButtonElement) => void;
  /** Renames; `done(false)` gives the form back to the person (the reason is in the status line). */
  readonly rename: (passkey: PasskeyInfo, name: string, done: (renamed: boolean) => void) => void;
  readonly remove: (passkey: PasskeyInfo, button: HTMLButtonElement) => void;
  /** Turns password sign-in on or off; the switch is disabled while the request is out. */
  readonly setPasswordSignIn: (on: boolean, input: HTMLInputElement) => void;
}

export interface PasskeysPageData {
  readonly passkeys: readonly PasskeyInfo[];
  readonly settings: PasskeySettings;
  /** False in a browser without WebAuthn: the list and the switch still work, creating does not. */
  readonly canCreate: boolean;
  /** The name the create form starts with: this browser and system, as the sessions page names them. */
  readonly userAgent: string;
}

/** The page; `status` is the outcome of the last action, announced at its top. */
export function passkeysPage(data: PasskeysPageData, actions: PasskeyActions, status?: string): Node[] {
  const { passkeys } = data;
  const count =
    passkeys.length === 0
      ? 'You have no passkey yet.'
      : passkeys.length === 1
        ? 'You have 1 passkey.'
        : `You have ${passkeys.length} passkeys.`;
  return [
    pageHeading('Passkeys'),
    h('p', { class: 'notice', role: 'status', id: 'passkeys-status' }, status ?? ''),
    h('div', { class: 'alert passkeys-alert', role: 'alert', id: 'passkeys-alert' }),
    h(
      'p',
      { class: 'lead' },
      'A passkey signs you in with your device’s screen lock (fingerprint, face or PIN) instead of your mail password. It cannot be phished: your browser uses it only on this site.',
    ),
    h('h2', { class: 'section-title', id: 'passkey-list-title' }, 'Your passkeys'),
    h('p', { class: 'lead' }, count),
    passkeys.length === 0
      ? null
      : h(
          'ul',
          { class: 'passkey-list', role: 'list', 'aria-labelledby': 'passkey-list-title' },
          ...passkeys.map((passkey) => passkeyCard(passkey, actions)),
        ),
    createCard(data, actions),
    passwordCard(data, actions),
    h(
      'p',
      { class: 'lead passkeys-recent' },
      'For your safety, creating or deleting a passkey and turning password sign-in on or off need a sign-in within the last 10 minutes; otherwise you are asked to sign in again.',
    ),
  ].filter((node): node is HTMLElement => node !== null);
}

/**
 * Says `message` in the page's alert; with `signInAgain`, a button beside it that does so, focused
 * (contract §12: the server refuses a sensitive change from a session older than 10 minutes).
 */
export function showPasskeyAlert(message: string, signInAgain?: () => void): void {
  const alert = document.getElementById('passkeys-alert');
  if (alert === null) return;
  // The status line said how the last action went; this is the news now.
  const status = document.getElementById('passkeys-status');
  if (status !== null) status.textContent = '';
  alert.replaceChildren(h('p', {}, message));
  if (signInAgain === undefined) return;
  const button = h('button', { type: 'button', class: 'button' }, 'Sign in again');
  button.addEventListener('click', signInAgain);
  alert.append(button);
  button.focus();
}

function createCard(data: PasskeysPageData, actions: PasskeyActions): HTMLElement {
  const title = h('h2', { id: 'passkey-create-title' }, 'Create a passkey');
  if (!data.canCreate) {
    return h(
      'section',
      { class: 'card passkey-create', 'aria-labelledby': 'passkey-create-title' },
      title,
      h(
        'p',
        {},
        'This browser cannot create passkeys. Open this page in a current Chrome, Edge, Firefox or Safari to create one.',
      ),
    );
  }
  const name = h('input', {
    id: 'passkey-name',
    name: 'name',
    type: 'text',
    value: deviceLabel(data.userAgent),
    maxlength: NAME_MAX,
    autocomplete: 'off',
    required: true,
    'aria-describedby': 'passkey-name-help',
  });
  const button = h('button', { type: 'submit', class: 'button' }, 'Create a passkey');
  const form = h(
    'form',
    { class: 'card form passkey-create', novalidate: true, 'aria-labelledby': 'passkey-create-title' },
    title,
    h('div', { class: 'field' }, h('label', { for: 'passkey-name' }, 'Name'), name),
    h(
      'p',
      { class: 'field-help', id: 'passkey-name-help' },
      'So you can tell your passkeys apart, for example by the device that keeps it.',
    ),
    button,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (button.disabled) return;
    const value = name.value.trim();
    if (value === '') {
      name.setAttribute('aria-invalid', 'true');
      showPasskeyAlert('Give the passkey a name.');
      name.focus();
      return;
    }
    name.removeAttribute('aria-invalid');
    actions.create(value, button);
  });
  return form;
}

function passkeyCard(passkey: PasskeyInfo, actions: PasskeyActions): HTMLElement {
  const heading = h('h3', { class: 'passkey-name' }, passkey.name);
  const rename = h(
    'button',
    { type: 'button', class: 'button button-secondary', 'aria-label': `Rename ${passkey.name}` },
    'Rename',
  );
  const remove = h(
    'button',
    { type: 'button', class: 'button button-secondary', 'aria-label': `Delete ${passkey.name}` },
    'Delete',
  );
  remove.addEventListener('click', () => actions.remove(passkey, remove));
  const buttons = h('div', { class: 'passkey-actions' }, rename, remove);
  const card = h(
    'li',
    { class: 'card passkey-card' },
    h(
      'div',
      { class: 'session-head' },
      heading,
      h(
        'span',
        { class: `badge ${passkey.synced ? 'badge-synced' : 'badge-device'}` },
        passkey.synced ? 'Synced' : 'On one device',
      ),
    ),
    passkey.cloned === true
      ? h(
          'p',
          { class: 'alert' },
          'A sign-in with this passkey was refused: its counter went backwards, so it may have been copied. If you did not copy it, delete it and create a new one.',
        )
      : null,
    h(
      'dl',
      { class: 'session-facts' },
      h('dt', {}, 'Created'),
      h('dd', {}, h('time', { datetime: passkey.created }, whenText(passkey.created))),
      h('dt', {}, 'Last used'),
      h(
        'dd',
        {},
        passkey.last_used === null
          ? 'Never'
          : h('time', { datetime: passkey.last_used }, whenText(passkey.last_used)),
      ),
    ),
    buttons,
  );
  rename.addEventListener('click', () => {
    const form = renameForm(passkey, actions, () => {
      form.replaceWith(buttons);
      rename.focus();
    });
    buttons.replaceWith(form);
    const input = form.querySelector('input');
    input?.focus();
    input?.select();
  });
  return card;
}

/** The inline rename form: Enter saves, Escape or Cancel gives the buttons back. */
function renameForm(passkey: PasskeyInfo, actions: PasskeyActions, close: () => void): HTMLFormElement {
  const input = h('input', {
    type: 'text',
    name: 'name',
    value: passkey.name,
    maxlength: NAME_MAX,
    autocomplete: 'off',
    required: true,
    'aria-label': `New name for ${passkey.name}`,
  });
  const save = h('button', { type: 'submit', class: 'button' }, 'Save');
  const cancel = h('button', { type: 'button', class: 'button button-secondary' }, 'Cancel');
  cancel.addEventListener('click', close);
  const form = h('form', { class: 'passkey-rename', novalidate: true }, input, save, cancel);
  form.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') {
      event.preventDefault();
      close();
    }
  });
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (save.disabled) return;
    const value = input.value.trim();
    if (value === '') {
      input.setAttribute('aria-invalid', 'true');
      showPasskeyAlert('Give the passkey a name.');
      input.focus();
      return;
    }
    if (value === passkey.name) return close();
    save.disabled = true;
    input.removeAttribute('aria-invalid');
    actions.rename(passkey, value, (renamed) => {
      if (renamed) return;
      save.disabled = false;
      input.focus();
    });
  });
  return form;
}

/** contract §12: the `password_sign_in` switch, with what it means now and why it may be locked. */
function passwordCard(data: PasskeysPageData, actions: PasskeyActions): HTMLElement {
  const { settings, passkeys } = data;
  const on = settings.password_sign_in;
  const locked = !settings.can_change || (on && passkeys.length === 0);
  const toggle = h('input', {
    id: 'password-sign-in',
    type: 'checkbox',
    role: 'switch',
    checked: on,
    disabled: locked,
    'aria-describedby': 'password-sign-in-help',
  });
  toggle.addEventListener('change', () => actions.setPasswordSignIn(toggle.checked, toggle));
  return h(
    'section',
    { class: 'card passkey-password', 'aria-labelledby': 'password-sign-in-title' },
    h('h2', { id: 'password-sign-in-title' }, 'Password sign-in'),
    h(
      'div',
      { class: 'switch' },
      toggle,
      h('label', { for: 'password-sign-in' }, 'Sign in with my mail password'),
    ),
    h('p', { class: 'field-help', id: 'password-sign-in-help' }, passwordHelp(data)),
  );
}

function passwordHelp({ settings, passkeys }: PasskeysPageData): string {
  // Without a passkey the switch is locked whoever decides (can_change is false either way).
  if (passkeys.length === 0 && settings.password_sign_in)
    return 'Create a passkey first. Then password sign-in can be turned off, and clubhouse no longer accepts your mail password.';
  if (!settings.can_change) {
    return settings.password_sign_in
      ? 'Your organisation decides whether your mail password signs you in here.'
      : 'Your organisation has turned password sign-in off for accounts with a passkey: sign in with a passkey. Deleting your last passkey turns password sign-in back on.';
  }
  if (!settings.password_sign_in)
    return 'Off: clubhouse refuses your mail password, even the right one, so a phished password does not open your account here. Sign in with a passkey. Deleting your last passkey turns password sign-in back on.';
  return 'Once your passkey works, turn this off: clubhouse then refuses your mail password, even the right one, so a phished password no longer opens your account here.';
}

export interface OfferActions {
  /** Runs the creation ceremony; `say` writes its outcome in the offer (and `done` ends the offer). */
  readonly create: (button: HTMLButtonElement, say: (message: string, done: boolean) => void) => void;
  readonly dismiss: () => void;
}

/**
 * contract §12: the offer to create a passkey after a password sign-in, above the page the person
 * came for. A region named by its heading; "Not now" removes it (app.ts remembers, so it is made once).
 */
export function passkeyOffer(actions: OfferActions): HTMLElement {
  const create = h('button', { type: 'button', class: 'button' }, 'Create a passkey');
  const dismiss = h('button', { type: 'button', class: 'button button-secondary' }, 'Not now');
  const message = h('p', { class: 'offer-message', role: 'status' });
  const buttons = h('div', { class: 'passkey-actions' }, create, dismiss);
  const offer = h(
    'section',
    { class: 'card passkey-offer', 'aria-labelledby': 'passkey-offer-title' },
    h('h2', { id: 'passkey-offer-title' }, 'Sign in faster with a passkey'),
    h(
      'p',
      {},
      'Next time, sign in with this device’s fingerprint, face or PIN instead of your mail password. A passkey cannot be phished.',
    ),
    message,
    buttons,
  );
  create.addEventListener('click', () => {
    if (create.disabled) return;
    create.disabled = true;
    actions.create(create, (text, done) => {
      message.textContent = text;
      if (!done) {
        create.disabled = false;
        return;
      }
      // The offer is settled: a link to the page where the passkey is managed replaces the buttons.
      const link = h('a', { class: 'account-link', href: '/passkeys' }, 'Manage your passkeys');
      buttons.replaceWith(h('p', {}, link));
      link.focus();
    });
  });
  dismiss.addEventListener('click', () => {
    offer.remove();
    actions.dismiss();
  });
  return offer;
}
