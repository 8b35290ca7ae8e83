/**
 * Reads what arrived at a Mailpit (tools/devstack/mailpit.ts) through its HTTP API
 * (https://mailpit.axllent.org/docs/api-v1/): the run's own (global setup: MAILPIT_API_URL),
 * or another started by a test. Waits with a deadline (`eventually`), never a fixed sleep.
 */
import { eventually } from './fixtures.js';

export interface MailAddress {
  Name: string;
  Address: string;
}

/** A message in a list (GET /api/v1/messages, /api/v1/search). */
export interface MailSummary {
  ID: string;
  MessageID: string;
  From: MailAddress;
  To: MailAddress[];
  Subject: string;
  Created: string;
  Snippet: string;
}

/** One message whole (GET /api/v1/message/{ID}). */
export interface MailMessageRead extends Omit<MailSummary, 'Created' | 'Snippet'> {
  Date: string;
  Text: string;
  HTML: string;
  /** Every header, by name (GET /api/v1/message/{ID}/headers). */
  headers: Record<string, string[]>;
}

export interface MailpitClient {
  /** The newest messages first. */
  list(limit?: number): Promise<MailSummary[]>;
  /** Mailpit's search syntax: `to:ops@example.com subject:"DOWN" message-id:<…>`. */
  search(query: string): Promise<MailSummary[]>;
  read(id: string): Promise<MailMessageRead>;
  /** Waits until `query` finds `count` messages (at least), and reads them whole, oldest first. */
  waitFor(query: string, count?: number, timeoutMs?: number): Promise<MailMessageRead[]>;
}

/** The run's Mailpit (global setup). */
export function runMailpit(): MailpitClient {
  const url = process.env.MAILPIT_API_URL;
  if (!url) throw new Error('MAILPIT_API_URL is not set: run the tests with npm test (global setup starts Mailpit)');
  return mailpitClient(url);
}

/** A client of the Mailpit whose web UI and API are at `baseUrl` (http://127.0.0.1:PORT). */
export function mailpitClient(baseUrl: string): MailpitClient {
  const get = async <T>(path: string): Promise<T> => {
    const r = await fetch(`${baseUrl.replace(/\/+$/, '')}/api/v1/${path}`, { signal: AbortSignal.timeout(5000) });
    if (!r.ok) throw new Error(`Mailpit GET ${path}: ${r.status} ${await r.text()}`);
    return (await r.json()) as T;
  };
  const client: MailpitClient = {
    list: async (limit = 50) => (await get<{ messages: MailSummary[] }>(`messages?limit=${limit}`)).messages,
    search: async (query) =>
      (await get<{ messages: MailSummary[] }>(`search?limit=200&query=${encodeURIComponent(query)}`)).messages,
    read: async (id) => {
      const [message, headers] = await Promise.all([
        get<Omit<MailMessageRead, 'headers'>>(`message/${encodeURIComponent(id)}`),
        get<Record<string, string[]>>(`message/${encodeURIComponent(id)}/headers`),
      ]);
      return { ...message, headers };
    },
    waitFor: async (query, count = 1, timeoutMs = 20_000) => {
      const found = await eventually(
        `${count} message(s) in Mailpit matching ${query}`,
        async () => {
          const list = await client.search(query);
          return list.length >= count ? list : undefined;
        },
        timeoutMs,
      );
      const oldestFirst = [...found].sort((a, b) => a.Created.localeCompare(b.Created));
      return Promise.all(oldestFirst.map((m) => client.read(m.ID)));
    },
  };
  return client;
}

/**
 * The invitation link (`…/console/#/invite/<token>`) in the newest mail to `email`: the only
 * place a mailed invitation's link goes (POST /api/invitations answers it only when the mail
 * could not be sent).
 */
export async function mailedInvitationLink(email: string, mailpit: MailpitClient = runMailpit()): Promise<string> {
  const mails = await mailpit.waitFor(`to:${email}`);
  const text = mails[mails.length - 1]!.Text;
  const link = /https?:\/\/\S+\/console\/#\/invite\/[A-Za-z0-9._~-]+/.exec(text)?.[0];
  if (link === undefined) throw new Error(`no invitation link in the mail to ${email}: ${text}`);
  return link;
}
