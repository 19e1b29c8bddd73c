// contract §13, for a group's administrators, on the group's page: the requests to join (approve,
// refuse), the members (make administrator, make member, remove) and an editor for the group's
// texts. Buttons name the person they act on for screen readers; removing someone, and stepping
// down oneself, ask first. The server decides every rule (the last administrator, a group whose
// members the directory manages) and its refusal is shown in words.
import type { ApiResult, GroupDetail } from './api.ts';
import { h } from './dom.ts';
import { confirmInPlace } from './group-confirm.ts';
import {
  editTexts,
  type GroupTexts,
  listMembers,
  type MemberRow,
  removeMember,
  setMemberStatus,
  TEXT_LIMITS,
} from './groups-api.ts';
import { actionFailureText, sessionGone } from './membership-text.ts';
import { memberStatusLabel, whenText } from './text.ts';

/** What the administration needs from the group page. */
export interface AdminContext {
  /** The signed-in username: their own row says "you" and asks before they step down. */
  readonly username: string;
  /** Runs one write, then re-reads and repaints the page, says `done` and focuses what `focus` finds. */
  readonly act: (
    button: HTMLButtonElement,
    write: () => Promise<ApiResult<unknown>>,
    done: string,
    focus: () => HTMLElement | null,
  ) => Promise<void>;
  /** Says a sentence in the page's live region. */
  readonly say: (message: string, failed?: boolean) => void;
  readonly sessionEnded: () => void;
  /** Repaints the page with the group as the server now answers it. */
  readonly setGroup: (group: GroupDetail) => void;
}

/**
 * The administrators' part of the page: the texts' Edit button, the requests and the members
 * (`members` as just read, or null: they are read now).
 */
export function adminSections(
  group: GroupDetail,
  members: readonly MemberRow[] | null,
  context: AdminContext,
): Node[] {
  const requestsTitle = h('h2', { id: 'requests-title', tabindex: '-1' }, 'Requests to join');
  const membersTitle = h('h2', { id: 'members-title', tabindex: '-1' }, 'Members');
  const requests = h('div', { class: 'member-area' }, h('p', { class: 'loading' }, 'Loading the requests…'));
  const current = h('div', { class: 'member-area' }, h('p', { class: 'loading' }, 'Loading the members…'));

  const show = (rows: readonly MemberRow[]) => {
    const pending = rows.filter((row) => row.member_status === 0);
    const others = rows.filter((row) => row.member_status !== 0);
    requestsTitle.textContent = `Requests to join (${pending.length})`;
    membersTitle.textContent = `Members (${others.length})`;
    requests.replaceChildren(
      pending.length === 0
        ? h('p', { class: 'muted' }, 'No one is waiting to join.')
        : memberList(pending, group, context, 'Requests to join'),
    );
    current.replaceChildren(memberList(others, group, context, 'Members'));
  };
  if (members !== null) show(members);
  else {
    void listMembers(group.id).then((result) => {
      if (!requests.isConnected) return;
      if (result.ok) return show(result.data);
      if (sessionGone(result)) return context.sessionEnded();
      const text = `The members could not be read. ${actionFailureText(result)}`;
      requests.replaceChildren(h('p', { class: 'alert' }, text));
      current.replaceChildren();
    });
  }

  const edit = h(
    'button',
    { type: 'button', class: 'button button-secondary', id: 'edit-texts' },
    'Edit texts',
  );
  edit.addEventListener('click', () => {
    const details = document.getElementById('group-details');
    if (details === null) return;
    const form = textsEditor(group, context, () => {
      form.replaceWith(details);
      edit.hidden = false;
      edit.focus();
    });
    details.replaceWith(form);
    edit.hidden = true;
    form.querySelector('textarea')?.focus();
  });

  return [
    edit,
    h(
      'section',
      { class: 'card admin-section', 'aria-labelledby': 'requests-title' },
      requestsTitle,
      requests,
    ),
    h('section', { class: 'card admin-section', 'aria-labelledby': 'members-title' }, membersTitle, current),
  ];
}

function memberList(rows: readonly MemberRow[], group: GroupDetail, context: AdminContext, label: string) {
  return h(
    'ul',
    { class: 'member-list', role: 'list', 'aria-label': label },
    ...rows.map((row) => memberItem(row, group, context)),
  );
}

function memberItem(row: MemberRow, group: GroupDetail, context: AdminContext): HTMLElement {
  const who = row.username;
  const self = who === context.username;
  const actions = h('div', { class: 'actions' });
  const button = (text: string, label: string, className = 'button button-secondary') =>
    h('button', { type: 'button', class: className, 'aria-label': label }, text);
  const heading = (id: string) => () => document.getElementById(id);
  const put = (target: HTMLButtonElement, status: 1 | 2, done: string, focus: string) =>
    void context.act(target, () => setMemberStatus(group.id, who, status), done, heading(focus));
  const remove = (target: HTMLButtonElement, done: string, focus: string) =>
    void context.act(target, () => removeMember(group.id, who), done, heading(focus));

  if (row.member_status === 0) {
    const approve = button('Approve', `Approve ${who}`, 'button');
    approve.addEventListener('click', () =>
      put(approve, 1, `${who} is now a member of ${group.name}.`, 'requests-title'),
    );
    const refuse = button('Refuse', `Refuse ${who}`);
    refuse.addEventListener('click', () => remove(refuse, `You refused ${who}’s request.`, 'requests-title'));
    actions.append(approve, refuse);
  } else if (row.member_status === 1) {
    const promote = button('Make administrator', `Make ${who} an administrator`);
    promote.addEventListener('click', () =>
      put(promote, 2, `${who} is now an administrator of ${group.name}.`, 'members-title'),
    );
    actions.append(promote);
  } else {
    const demote = button('Make member', self ? 'Stop being an administrator' : `Make ${who} a member`);
    demote.addEventListener('click', () => {
      if (!self)
        return put(demote, 1, `${who} is now a member, no longer an administrator.`, 'members-title');
      confirmInPlace(
        actions,
        'Stop being an administrator? You could no longer manage this group.',
        'Step down',
        (yes) => put(yes, 1, 'You are now a member, no longer an administrator.', 'group-status'),
      );
    });
    actions.append(demote);
  }
  // Leaving oneself is the "Leave group" button above; here one removes others.
  if (row.member_status !== 0 && !self) {
    const out = button('Remove', `Remove ${who}`, 'button button-secondary button-quiet-danger');
    out.addEventListener('click', () =>
      confirmInPlace(actions, `Remove ${who} from ${group.name}?`, 'Remove', (yes) =>
        remove(yes, `${who} is no longer in ${group.name}.`, 'members-title'),
      ),
    );
    actions.append(out);
  }

  return h(
    'li',
    { class: 'member-row' },
    h(
      'div',
      { class: 'member-who' },
      h('span', { class: 'member-name' }, who, self ? h('span', { class: 'member-you' }, ' (you)') : null),
      h('span', { class: `badge badge-status-${row.member_status}` }, memberStatusLabel(row.member_status)),
      row.since === null
        ? null
        : h(
            'span',
            { class: 'member-since' },
            row.member_status === 0 ? 'Asked ' : 'Since ',
            h('time', { datetime: row.since }, whenText(row.since)),
          ),
    ),
    actions,
  );
}

/** The form for the group's texts (contract §4's limits, counted in characters as the server does). */
function textsEditor(group: GroupDetail, context: AdminContext, close: () => void): HTMLFormElement {
  const fields = [
    { name: 'description', label: 'About', value: group.description },
    { name: 'short_description', label: 'Requirement to join', value: group.short_description },
    { name: 'activities', label: 'Activities', value: group.activities },
  ] as const;
  const error = h('p', { class: 'alert', role: 'alert', id: 'texts-error' });
  const boxes = fields.map((field) => {
    const id = `text-${field.name}`;
    const box = h('textarea', {
      id,
      name: field.name,
      rows: field.name === 'short_description' ? 2 : 5,
      'aria-describedby': `${id}-hint ${id}-error`,
    });
    box.value = field.value;
    const fieldError = h('p', { class: 'field-error', id: `${id}-error` });
    // An error is about the text that was refused: editing it clears the complaint.
    box.addEventListener('input', () => {
      fieldError.textContent = '';
      box.removeAttribute('aria-invalid');
    });
    const limit = TEXT_LIMITS[field.name];
    return {
      ...field,
      box,
      fieldError,
      limit,
      node: h(
        'div',
        { class: 'field' },
        h('label', { for: id }, field.label),
        box,
        h('p', { class: 'hint', id: `${id}-hint` }, `Up to ${limit.toLocaleString()} characters.`),
        fieldError,
      ),
    };
  });
  const save = h('button', { type: 'submit', class: 'button' }, 'Save');
  const cancel = h('button', { type: 'button', class: 'button button-secondary' }, 'Cancel');
  cancel.addEventListener('click', close);
  const form = h(
    'form',
    { class: 'card form texts-editor', novalidate: true, 'aria-labelledby': 'texts-title' },
    h('h2', { id: 'texts-title' }, 'Edit the group’s texts'),
    error,
    ...boxes.map((box) => box.node),
    h('div', { class: 'actions' }, save, cancel),
  );

  const showErrors = (messages: Readonly<Record<string, string>>) => {
    for (const box of boxes) {
      const message = messages[box.name] ?? '';
      box.fieldError.textContent = message;
      box.box.setAttribute('aria-invalid', String(message !== ''));
    }
    boxes.find((box) => messages[box.name] !== undefined)?.box.focus();
  };

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.textContent = '';
    const changes: GroupTexts = {};
    const tooLong: Record<string, string> = {};
    for (const box of boxes) {
      if (box.box.value === box.value) continue;
      changes[box.name] = box.box.value;
      // Code points, as contract §4 counts (a textarea's maxlength would count UTF-16 units).
      if ([...box.box.value].length > box.limit)
        tooLong[box.name] = `Ensure this field has no more than ${box.limit.toLocaleString()} characters.`;
    }
    showErrors(tooLong);
    if (Object.keys(tooLong).length > 0) return;
    if (Object.keys(changes).length === 0) {
      close();
      context.say('Nothing changed, so nothing was saved.');
      return;
    }
    save.disabled = true;
    form.setAttribute('aria-busy', 'true');
    const result = await editTexts(group.id, changes);
    if (!form.isConnected) return;
    save.disabled = false;
    form.removeAttribute('aria-busy');
    if (result.ok) {
      context.setGroup(result.data);
      context.say('The group’s texts are saved.');
      document.getElementById('edit-texts')?.focus();
      return;
    }
    if (sessionGone(result)) return context.sessionEnded();
    if (result.fields !== null) {
      const named: Record<string, string> = {};
      const other: string[] = [];
      for (const [name, messages] of Object.entries(result.fields)) {
        if (boxes.some((box) => box.name === name)) named[name] = messages.join(' ');
        else other.push(`${name}: ${messages.join(' ')}`);
      }
      showErrors(named);
      error.textContent = other.length === 0 ? 'Please correct the fields marked below.' : other.join(' ');
      if (Object.keys(named).length === 0) save.focus();
      return;
    }
    error.textContent = actionFailureText(result);
    save.focus();
  });
  return form;
}
