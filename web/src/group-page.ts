// One group's page (`/group/{id}`): what the group is, the caller's membership with the way in or out
// of contract §13 ("Ask to join" with the requirement shown, "Withdraw request", "Leave group"), and
// for its administrators the administration of group-admin.ts. After every action the page asks
// the server again and shows what it answers, says the outcome in a live region, and puts focus
// where the next step is.
import { type ApiResult, type GroupDetail, getGroup } from './api.ts';
import { h } from './dom.ts';
import { type AdminContext, adminSections } from './group-admin.ts';
import { confirmInPlace } from './group-confirm.ts';
import { askToJoin, leaveGroup, listMembers, type MemberRow } from './groups-api.ts';
import { actionFailureText, sessionGone } from './membership-text.ts';
import { memberStatusLabel } from './text.ts';
import { backLink, detailSection, pageHeading, typeBadge } from './views.ts';

/** What the page needs from the app. */
export interface GroupEnv {
  /** The signed-in username (an administrator's own row in the members). */
  readonly username: string;
  /** The session ended while the page was open: sign in again (the address keeps the page). */
  readonly sessionEnded: () => void;
}

/** The page for `group`, as GET /api/group/{id} answered it. */
export function groupView(initial: GroupDetail, env: GroupEnv): Node[] {
  let group = initial;
  // role=status: every outcome (and every refusal, in words) is announced where it happened.
  const status = h('p', { id: 'group-status', class: 'notice', role: 'status', tabindex: '-1' });
  const body = h('div', { class: 'group-body' });

  const say = (message: string, failed = false) => {
    status.textContent = message;
    status.classList.toggle('alert', failed);
    status.classList.toggle('notice', !failed);
  };

  /**
   * Asks the server for the group again (and an administrator's members, so the page is painted
   * once, whole) and repaints; false when the page cannot be shown.
   */
  const refresh = async (): Promise<boolean> => {
    const result = await getGroup(group.id);
    const members = result.ok && result.data.member_status === 2 ? await listMembers(group.id) : null;
    if (!body.isConnected) return false;
    if (!result.ok) {
      if (sessionGone(result)) env.sessionEnded();
      else say(actionFailureText(result), true);
      return false;
    }
    group = result.data;
    // Members that could not be read are read again by the administration itself, and said there.
    render(members?.ok === true ? members.data : null);
    return true;
  };

  /**
   * Runs one write: the button waits while it is out; a refusal is said in words (and the page
   * re-read when it means the page is out of date); success re-reads the page, says `done` and
   * focuses what `focus` finds.
   */
  const act = async (
    button: HTMLButtonElement,
    write: () => Promise<ApiResult<unknown>>,
    done: string,
    focus: () => HTMLElement | null,
  ): Promise<void> => {
    button.disabled = true;
    button.setAttribute('aria-busy', 'true');
    const result = await write();
    if (!body.isConnected) return;
    if (!result.ok) {
      if (sessionGone(result)) return env.sessionEnded();
      button.disabled = false;
      button.removeAttribute('aria-busy');
      // A disabled button loses focus; give it back, so the keyboard is where it was.
      button.focus();
      say(actionFailureText(result), true);
      // 403: no longer an administrator; 404: that person or request is gone. Show what is; the
      // button went with the old page, so focus goes to the sentence saying why.
      if ((result.status === 403 || result.status === 404) && (await refresh())) status.focus();
      return;
    }
    if (await refresh()) {
      say(done);
      (focus() ?? pageTitle()).focus();
    }
  };

  // Name and type are not among the texts an administrator edits: the head is painted once.
  const title = pageHeading(initial.name);
  const pageTitle = () => title;

  const context: AdminContext = {
    username: env.username,
    act,
    say,
    sessionEnded: env.sessionEnded,
    setGroup: (updated) => {
      group = updated;
      render(null);
    },
  };

  const render = (members: readonly MemberRow[] | null) => {
    body.replaceChildren(
      membershipCard(group, act),
      h(
        'div',
        { class: 'card details', id: 'group-details' },
        detailSection('About', group.description),
        detailSection('Requirement to join', group.short_description),
        detailSection('Activities', group.activities),
      ),
      ...(group.member_status === 2 ? adminSections(group, members, context) : []),
    );
  };

  render(null);
  return [backLink(), h('div', { class: 'group-head' }, title, typeBadge(initial.type)), status, body];
}

type Act = (
  button: HTMLButtonElement,
  write: () => Promise<ApiResult<unknown>>,
  done: string,
  focus: () => HTMLElement | null,
) => Promise<void>;

/** The caller's membership and the one way on from it (contract §13's transitions). */
function membershipCard(group: GroupDetail, act: Act): HTMLElement {
  const status = group.member_status;
  const card = h(
    'section',
    { class: 'card membership-card', 'aria-label': 'Your membership' },
    h(
      'p',
      { class: 'membership' },
      'Your membership: ',
      h('span', { class: `badge badge-status-${status < 0 ? 'none' : status}` }, memberStatusLabel(status)),
    ),
  );
  const actions = h('div', { class: 'actions' });
  const button = (label: string, className = 'button') =>
    h('button', { type: 'button', class: className, id: 'membership-action' }, label);
  const again = () => document.getElementById('membership-action');

  if (status < 0) {
    card.append(
      h(
        'p',
        {},
        group.short_description === ''
          ? 'This group names no requirement to join.'
          : `To join: ${group.short_description}`,
      ),
    );
    const ask = button('Ask to join');
    ask.addEventListener(
      'click',
      () =>
        void act(
          ask,
          () => askToJoin(group.id),
          `Your request to join ${group.name} was sent. An administrator will decide.`,
          again,
        ),
    );
    actions.append(ask);
  } else if (status === 0) {
    card.append(h('p', {}, 'Your request to join is waiting for an administrator.'));
    const withdraw = button('Withdraw request', 'button button-secondary');
    withdraw.addEventListener(
      'click',
      () => void act(withdraw, () => leaveGroup(group.id), 'You withdrew your request to join.', again),
    );
    actions.append(withdraw);
  } else {
    const leave = button('Leave group', 'button button-secondary');
    leave.addEventListener('click', () =>
      confirmInPlace(
        actions,
        `Leave ${group.name}? To come back you would have to ask to join again.`,
        'Leave',
        (yes) => void act(yes, () => leaveGroup(group.id), `You left ${group.name}.`, again),
      ),
    );
    actions.append(leave);
  }
  card.append(actions);
  return card;
}
