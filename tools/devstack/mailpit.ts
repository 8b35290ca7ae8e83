/**
 * Mailpit (github.com/axllent/mailpit): a real SMTP server that keeps what arrives and shows
 * it in a web UI and an HTTP API. `npm start` points the services' SMTP_URL at it and the
 * tests read mail back through its API (test/support/mailpit.ts). Built once into the cache
 * (installers.ts), run as a ManagedProcess on free loopback ports, its messages in a
 * temporary database that Mailpit removes on exit.
 */
import { join } from 'node:path';
import { ensureMailpit } from './installers.js';
import { freePort } from './ports.js';
import { httpOk } from './probes.js';
import { ManagedProcess } from './process.js';

export interface Mailpit {
  /** smtp://127.0.0.1:PORT: what services get as SMTP_URL (any AUTH is accepted, also without TLS). */
  smtpUrl: string;
  /** http://127.0.0.1:PORT: the web UI, and the API under /api/v1. */
  httpUrl: string;
  stop(): Promise<void>;
}

export interface MailpitOptions {
  /** Where its log goes (a directory that exists). */
  logDir: string;
  smtpPort?: number;
  httpPort?: number;
  /** Extra flags (e.g. --smtp-allowed-recipients for a server that refuses some). */
  args?: string[];
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
}

/** Builds Mailpit if needed, starts it and waits until its API answers. */
export async function startMailpit(o: MailpitOptions): Promise<Mailpit> {
  const log = o.log ?? ((l: string) => process.stderr.write(`[stack] ${l}\n`));
  const bin = await ensureMailpit(o.env ?? process.env, log);
  const smtpPort = o.smtpPort ?? (await freePort());
  const httpPort = o.httpPort ?? (await freePort());
  const httpUrl = `http://127.0.0.1:${httpPort}`;
  const mailpit = new ManagedProcess({
    name: 'Mailpit',
    command: [
      bin,
      [
        `--smtp=127.0.0.1:${smtpPort}`,
        `--listen=127.0.0.1:${httpPort}`,
        // AUTH from an SMTP_URL's userinfo is accepted, over plain SMTP too (loopback only).
        '--smtp-auth-accept-any',
        '--smtp-auth-allow-insecure',
        // Nothing leaves this machine: no reverse DNS of clients, no update check.
        '--smtp-disable-rdns',
        '--disable-version-check',
        '--max=5000',
        '--quiet',
        ...(o.args ?? []),
      ],
    ],
    output: 'file',
    logFile: join(o.logDir, `mailpit-${smtpPort}.log`),
  });
  mailpit.start();
  try {
    await mailpit.waitAnswers('Mailpit', () => httpOk(`${httpUrl}/readyz`), 30_000);
    await mailpit.waitForPort(smtpPort, 10_000);
  } catch (err) {
    await mailpit.stop('SIGKILL');
    throw err;
  }
  return { smtpUrl: `smtp://127.0.0.1:${smtpPort}`, httpUrl, stop: async () => void (await mailpit.stop()) };
}
