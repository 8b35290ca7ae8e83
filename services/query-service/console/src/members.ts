import { ROLES, type InvitationView, type MemberView } from '@telemetry/contract/access';
import { call, get, session } from './api.js';
import { failure, h, loadView, scroller, show, table, time } from './dom.js';
import { guard, guardForm, roleNote } from './guard.js';
import { field, onSubmit, shownOnce, statusLine, value } from './people-form.js';

/**
 * #/members (docs/console.md): the tenant's members with their roles, the pending
 * invitations, and an invite form (its link is shown once, only when it could not be mailed). Without members:write the
 * controls are disabled (guard.ts).
 *
 * Ids a test can find: table#members with tr[data-member=PERSON_ID], its select.member-role
 * and button.member-remove; table#invitations with tr[data-invitation=ID] and
 * button.invitation-revoke; form#invite-form with #invite-email, #invite-role and
 * #invite-status; the link shown once in #invitation-link when the mail was not sent; #members-notice.
 */

const roleOptions = (selected: string): HTMLElement[] =>
  ROLES.map((r) => h('option', { value: r, selected: r === selected }, r));

export async function membersPage(main: HTMLElement): Promise<void> {
  const title = 'Members';
  const loaded = await loadView(
    main,
    title,
    'Loading the members…',
    () => Promise.all([get<MemberView[]>('/api/members'), get<InvitationView[]>('/api/invitations')]),
    () => void membersPage(main),
  );
  if (!loaded) return;
  const [members, invitations] = loaded;
  const me = session.view()?.person.id;
  const notice = h('div', { id: 'members-notice', role: 'status' });
  /** After a change: the page again, with what happened (or what failed, and `undo`) above it. */
  const act = (what: Promise<unknown>, done: string, undo?: () => void): void => {
    what.then(
      async () => {
        await membersPage(main);
        const fresh = main.querySelector('#members-notice');
        if (fresh) show(fresh, done);
      },
      (err: unknown) => {
        undo?.();
        show(notice, failure(err));
      },
    );
  };

  const roleSelect = (m: MemberView): HTMLElement => {
    const select = h('select', { class: 'member-role', 'aria-label': `Role of ${m.email}` }, roleOptions(m.role));
    select.addEventListener('change', () =>
      act(
        call('PATCH', `/api/members/${m.id}`, { role: select.value }),
        `${m.email} is now ${select.value}.`,
        () => (select.value = m.role),
      ),
    );
    return guard('members:write', select);
  };
  const removeButton = (m: MemberView): HTMLElement => {
    const leaving = m.id === me;
    const button = h(
      'button',
      {
        type: 'button',
        class: 'danger member-remove',
        onclick: () => {
          if (!confirm(leaving ? 'Leave this tenant? You lose access at once.' : `Remove ${m.email} from the tenant?`))
            return;
          act(call('DELETE', `/api/members/${m.id}`), `${m.email} is no longer a member.`);
        },
      },
      leaving ? 'Leave' : `Remove ${m.email}`,
    );
    // Anyone may leave; removing another takes members:write.
    return leaving ? button : guard('members:write', button);
  };
  const memberRows = members.map((m) => {
    const cells = [
      h('td', {}, m.name, m.id === me ? ' (you)' : ''),
      h('td', {}, m.email),
      h('td', {}, roleSelect(m)),
      h('td', {}, time(m.joined_at)),
      h('td', {}, m.password ? (m.totp ? 'password + TOTP' : 'password') : 'single sign-on'),
      h('td', {}, removeButton(m)),
    ];
    return cells;
  });
  const membersTable = table({ id: 'members' }, ['Name', 'Email', 'Role', 'Joined', 'Signs in with', ''], memberRows);
  membersTable.querySelectorAll('tbody tr').forEach((tr, i) => tr.setAttribute('data-member', members[i]!.id));

  const invitationsTable = table(
    { id: 'invitations' },
    ['Email', 'Role', 'Invited by', 'Sent', 'Expires', ''],
    invitations.map((i) => [
      h('td', {}, i.email),
      h('td', {}, i.role),
      h('td', {}, i.invited_by),
      h('td', {}, time(i.created_at)),
      h('td', {}, time(i.expires_at)),
      h(
        'td',
        {},
        guard(
          'members:write',
          h(
            'button',
            {
              type: 'button',
              class: 'invitation-revoke',
              onclick: () => {
                if (!confirm(`Revoke the invitation to ${i.email}? Its link stops working.`)) return;
                act(call('DELETE', `/api/invitations/${i.id}`), `The invitation to ${i.email} is revoked.`);
              },
            },
            `Revoke ${i.email}`,
          ),
        ),
      ),
    ]),
  );
  invitationsTable
    .querySelectorAll('tbody tr')
    .forEach((tr, i) => tr.setAttribute('data-invitation', invitations[i]!.id));

  const status = statusLine('invite-status');
  const link = h('div', { id: 'invitation-link-box' });
  const form = h(
    'form',
    { id: 'invite-form' },
    field('invite-email', 'Email', { type: 'email', required: true, autocomplete: 'off' }),
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'invite-role' }, 'Role'),
      h('select', { id: 'invite-role', name: 'invite-role' }, roleOptions('viewer')),
    ),
    status,
    h('button', { type: 'submit', class: 'primary' }, 'Send the invitation'),
  );
  onSubmit(form, status, async () => {
    const email = value(form, 'invite-email');
    const made = await call<InvitationView & { link?: string; mail_sent: boolean }>('POST', '/api/invitations', {
      email,
      role: value(form, 'invite-role'),
    });
    // The list redraws without the form's outcome: it goes above it. The answer has a link
    // only when the mail could not be sent: then the inviter hands it to the invitee alone.
    await membersPage(main);
    const box = main.querySelector('#invitation-link-box');
    const handOver = made.data.link;
    if (box)
      show(
        box,
        ...(handOver === undefined
          ? [h('p', { role: 'status' }, `An invitation is on its way to ${email}.`)]
          : [
              h(
                'p',
                { role: 'status' },
                `The mail to ${email} could not be sent: hand them this link yourself, and nobody else (whoever holds it can join as them).`,
              ),
              shownOnce('invitation-link', 'Its link', handOver),
            ]),
      );
  });

  show(
    main,
    h('h1', {}, title),
    roleNote('members:write'),
    notice,
    scroller('Members', membersTable),
    h('h2', {}, 'Pending invitations'),
    invitations.length === 0 ? h('p', { class: 'empty' }, 'None.') : scroller('Pending invitations', invitationsTable),
    h('h2', {}, 'Invite someone'),
    link,
    guardForm('members:write', form),
  );
}
