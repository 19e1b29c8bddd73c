// The pages, built as DOM nodes: login, the logged-in frame, my groups, one group, and the
// not-found / unavailable states. They hold no state; app.ts decides which one to show.
import { type Group, providerStartUrl, type SignInMethods } from './api.ts';
import { h } from './dom.ts';
import { groupTypeLabel } from './text.ts';

/** Why a login failed, in words; `wrongPassword` clears the password field and focuses it. */
export interface LoginFailure {
  readonly message: string;
  readonly wrongPassword: boolean;
}

/** What the login form does with credentials: resolves to the failure, or null once signed in. */
type SubmitLogin = (username: string, password: string) => Promise<LoginFailure | null>;

export interface LoginOptions {
  /** A calm status line above the form (signed out, session ended). */
  readonly notice?: string;
  /** An error said first (contract §10: a sign-in at a provider that did not work). */
  readonly error?: string;
  readonly submit: SubmitLogin;
  /** The providers' buttons, above the password form (or alone, without a password backend). */
  readonly methods: SignInMethods;
  /** Where a provider sends people back to once signed in: the page they asked for. */
  readonly next: string;
  /**
   * contract §12: "Sign in with a passkey" beside the password form, when passkeys are on here and
   * the browser has WebAuthn; resolves like `submit`. Absent: no passkey anywhere on the page.
   */
  readonly passkey?: () => Promise<LoginFailure | null>;
}

/** The sign-in page, and how the app reports a failure of the passkey autofill it started. */
export interface LoginView {
  readonly main: HTMLElement;
  /** The username field, or the first provider's button. */
  readonly focus: HTMLElement;
  /** Says why a passkey sign-in failed, in the form's alert. */
  readonly passkeyFailed: (failure: LoginFailure) => void;
}

/** contract §10: one link per identity provider, styled as a button (a link: it leaves the page). */
function providerButtons(methods: SignInMethods, next: string): HTMLElement | null {
  if (methods.providers.length === 0) return null;
  return h(
    'ul',
    { class: 'providers', role: 'list', 'aria-label': 'Sign in at your organisation' },
    ...methods.providers.map((provider) =>
      h(
        'li',
        {},
        h(
          'a',
          { class: 'button button-wide provider', href: providerStartUrl(provider.name, next) },
          provider.label,
        ),
      ),
    ),
  );
}

/** The sign-in page; the element to focus is the username field, or the first provider's button. */
export function loginPage(options: LoginOptions): LoginView {
  const username = h('input', {
    id: 'username',
    name: 'username',
    type: 'text',
    // contract §12: the "webauthn" token lets the browser offer passkeys in this field's autofill.
    autocomplete: options.passkey === undefined ? 'username' : 'username webauthn',
    autocapitalize: 'none',
    spellcheck: 'false',
    required: true,
    'aria-describedby': 'login-error',
  });
  const password = h('input', {
    id: 'password',
    name: 'password',
    type: 'password',
    autocomplete: 'current-password',
    required: true,
    'aria-describedby': 'login-error',
  });
  // role=alert: screen readers announce the sentence as soon as it is written.
  const error = h('div', { id: 'login-error', class: 'alert', role: 'alert' });
  const button = h('button', { type: 'submit', class: 'button button-wide' }, 'Sign in');
  // novalidate: our own messages, announced the same way as the server's answers.
  const form = h(
    'form',
    { class: 'form', novalidate: true, 'aria-labelledby': 'login-title' },
    error,
    h('div', { class: 'field' }, h('label', { for: 'username' }, 'Username'), username),
    h('div', { class: 'field' }, h('label', { for: 'password' }, 'Password'), password),
    button,
  );

  const showError = (message: string, invalid: readonly HTMLInputElement[]) => {
    error.textContent = message;
    for (const input of [username, password])
      input.setAttribute('aria-invalid', String(invalid.includes(input)));
  };

  let busy = false;
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (busy) return;
    const name = username.value.trim();
    if (name === '' || password.value === '') {
      const missing = name === '' ? username : password;
      showError(name === '' ? 'Enter your username.' : 'Enter your password.', [missing]);
      missing.focus();
      return;
    }
    busy = true;
    button.disabled = true;
    button.textContent = 'Signing in…';
    form.setAttribute('aria-busy', 'true');
    showError('', []);
    const failure = await options.submit(name, password.value);
    if (failure === null) return; // signed in: the app has replaced this page
    busy = false;
    button.disabled = false;
    button.textContent = 'Sign in';
    form.removeAttribute('aria-busy');
    showError(failure.message, failure.wrongPassword ? [username, password] : []);
    if (failure.wrongPassword) {
      password.value = '';
      password.focus();
    }
  });

  const passkeyButton =
    options.passkey === undefined
      ? null
      : h(
          'button',
          { type: 'button', class: 'button button-wide button-secondary passkey-signin' },
          'Sign in with a passkey',
        );
  const passkey = options.passkey;
  passkeyButton?.addEventListener('click', async () => {
    if (busy || passkey === undefined) return;
    busy = true;
    passkeyButton.disabled = true;
    passkeyButton.textContent = 'Waiting for your passkey…';
    showError('', []);
    const failure = await passkey();
    if (failure === null) return; // signed in: the app has replaced this page
    busy = false;
    passkeyButton.disabled = false;
    passkeyButton.textContent = 'Sign in with a passkey';
    showError(failure.message, []);
    passkeyButton.focus();
  });

  const { methods } = options;
  const buttons = providerButtons(methods, options.next);
  const withForm = methods.passwordLogin || buttons === null;
  const main = h(
    'main',
    { id: 'main', class: 'page page-centered' },
    h(
      'div',
      { class: 'card login-card' },
      h('p', { class: 'brand brand-large' }, 'clubhouse'),
      h('h1', { id: 'login-title', tabindex: '-1' }, 'Sign in'),
      options.error === undefined
        ? null
        : h('p', { class: 'alert', role: 'alert', id: 'signin-error' }, options.error),
      options.notice === undefined ? null : h('p', { class: 'notice', role: 'status' }, options.notice),
      buttons,
      buttons !== null && withForm ? h('p', { class: 'divider' }, 'or') : null,
      withForm ? h('p', { class: 'lead' }, 'Use the username and password of your mail account.') : null,
      withForm ? form : null,
      passkeyButton === null ? null : h('p', { class: 'divider' }, 'or'),
      passkeyButton,
    ),
  );
  const first = buttons?.querySelector<HTMLElement>('a') ?? null;
  return {
    main,
    focus: withForm ? username : (first ?? username),
    passkeyFailed: (failure) => showError(failure.message, []),
  };
}

/**
 * The frame of every logged-in page: skip link, top bar with the user, "Where you're signed in", then
 * "Passkeys" when passkeys are on here (contract §12), Sign out, and `main`.
 */
export function loggedInFrame(
  username: string,
  onSignOut: (button: HTMLButtonElement) => void,
  passkeys = false,
): {
  nodes: Node[];
  main: HTMLElement;
} {
  const main = h('main', { id: 'main', class: 'page', tabindex: '-1' });
  const skip = h('a', { class: 'skip-link', href: '#main' }, 'Skip to main content');
  // The fragment link would be a history entry and a popstate; focusing main directly is what it means.
  skip.addEventListener('click', (event) => {
    event.preventDefault();
    main.focus();
  });
  const signOut = h('button', { type: 'button', class: 'button button-secondary' }, 'Sign out');
  signOut.addEventListener('click', () => onSignOut(signOut));
  const header = h(
    'header',
    { class: 'topbar' },
    h(
      'div',
      { class: 'topbar-inner' },
      h(
        'div',
        { class: 'topbar-start' },
        h('a', { class: 'brand', href: '/' }, 'clubhouse'),
        // contract §13: every group, for finding one to join.
        h(
          'nav',
          { 'aria-label': 'Groups' },
          h('a', { class: 'account-link', href: '/groups' }, 'Find a group'),
        ),
      ),
      h(
        'div',
        { class: 'account' },
        h(
          'span',
          { class: 'who' },
          h('span', { class: 'who-prefix' }, 'Signed in as '),
          h('strong', {}, username),
        ),
        h('a', { class: 'account-link', href: '/sessions' }, 'Where you’re signed in'),
        passkeys ? h('a', { class: 'account-link', href: '/passkeys' }, 'Passkeys') : null,
        signOut,
      ),
    ),
  );
  return { nodes: [skip, header, main], main };
}

/** A heading that scripts can focus after a page change, so screen readers announce the new page. */
export function pageHeading(text: string): HTMLHeadingElement {
  return h('h1', { tabindex: '-1' }, text);
}

/** A "Loading…" line for `main` while a request is out. */
export function loading(text: string): HTMLElement {
  return h('p', { class: 'loading', role: 'status' }, text);
}

/** The caller's groups as cards, or the empty state. */
export function groupsPage(groups: readonly Group[]): Node[] {
  const heading = pageHeading('My groups');
  if (groups.length === 0) {
    return [
      heading,
      h(
        'div',
        { class: 'card empty' },
        h('p', { class: 'empty-title' }, 'You are not a member of any group yet.'),
        h('p', {}, 'Once a group administrator accepts you, the group shows up here.'),
        h('p', {}, h('a', { href: '/groups' }, 'Find a group to join')),
      ),
    ];
  }
  const count = groups.length === 1 ? 'You belong to 1 group.' : `You belong to ${groups.length} groups.`;
  return [
    heading,
    h('p', { class: 'lead' }, count),
    h(
      'ul',
      { class: 'group-list', role: 'list' },
      ...groups.map((group) =>
        h(
          'li',
          { class: 'card group-card' },
          h('h2', { class: 'group-name' }, h('a', { href: `/group/${group.id}` }, group.name)),
          typeBadge(group.type),
          group.description === '' ? null : h('p', { class: 'group-summary' }, group.description),
        ),
      ),
    ),
  ];
}

/** The page for a path or group that does not exist. */
export function notFoundPage(what: string): Node[] {
  return [backLink(), pageHeading('Not found'), h('p', { class: 'lead' }, what)];
}

/** The service (or the network) is down; `retry` tries the same page again. */
export function unavailablePage(message: string, retry: () => void): Node[] {
  const button = h('button', { type: 'button', class: 'button' }, 'Try again');
  button.addEventListener('click', retry);
  return [pageHeading('Service unavailable'), h('p', { class: 'alert', role: 'alert' }, message), button];
}

/** "← My groups", at the top of a group's page. */
export function backLink(): HTMLElement {
  return h('p', { class: 'back' }, h('a', { class: 'back-link', href: '/' }, '← My groups'));
}

/** contract §4: the group's type as a badge. */
export function typeBadge(type: number): HTMLElement {
  return h('span', { class: `badge badge-type-${type === 1 ? 1 : 0}` }, groupTypeLabel(type));
}

/** One of a group's texts under its heading, or "Not given." */
export function detailSection(title: string, text: string): HTMLElement {
  return h(
    'section',
    { class: 'detail' },
    h('h2', {}, title),
    text === '' ? h('p', { class: 'muted' }, 'Not given.') : h('p', { class: 'prose' }, text),
  );
}
