import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { delimiter, isAbsolute, join } from 'node:path';

/**
 * Sending ICMP echo requests (docs/monitors.md, "icmp"). Node has no ICMP sockets, so the
 * runner runs the system's iputils `ping`, which itself opens an unprivileged ICMP
 * datagram socket where net.ipv4.ping_group_range allows the runner's group and a raw
 * socket otherwise (it needs CAP_NET_RAW then: Debian's ping has it as a file
 * capability). NOTE: the npm packages that speak ICMP (net-ping over raw-socket) are native
 * add-ons for raw sockets only, which need root or CAP_NET_RAW for the whole Node process:
 * the runner would hold more privilege than the one small program that needs it.
 */

/** One check's echo requests, to an address the egress policy allowed. */
export interface PingRequest {
  /** An IP literal: never a name (it was resolved and judged before). */
  address: string;
  family: 4 | 6;
  count: number;
  /** How long to wait for a reply once every request is sent and none came back. */
  waitMs: number;
  intervalMs: number;
  /** Aborted at the monitor's timeout: the pinger stops and says what it saw until then. */
  signal: AbortSignal;
}

/** What the echo requests found. */
export interface PingSummary {
  sent: number;
  received: number;
  /** Round-trip times of the replies, in ms (absent when none came back). */
  rttMinMs?: number;
  rttAvgMs?: number;
  rttMaxMs?: number;
}

export type PingOutcome =
  | ({ ok: true; aborted: boolean } & PingSummary)
  /** No echo request could be sent (no ping program, no permission, no route): why, in words. */
  | { ok: false; aborted: boolean; reason: string };

/** What sends echo requests: the system ping (systemPinger), or a test's own. */
export interface Pinger {
  ping(req: PingRequest): Promise<PingOutcome>;
}

/** Bytes of ping's output kept: 20 replies and the summary take about 1.5 KB. */
const MAX_OUTPUT_BYTES = 64 * 1024;
/** After the abort's SIGINT (ping then prints its summary), how long before SIGKILL. */
const KILL_GRACE_MS = 500;

const REPLY = /^\d+ bytes from [^:]+: icmp_seq=(\d+) ttl=\d+ time[=<]([\d.]+) ?ms(.*)$/;
const SUMMARY =
  /^(\d+) packets transmitted, (\d+) (?:packets )?received(?:, \+\d+ duplicates)?(?:, \+\d+ corrupted)?(?:, \+\d+ errors)?, [\d.]+% packet loss/;
const RTT = /^(?:rtt|round-trip) min\/avg\/max(?:\/mdev)? = ([\d.]+)\/([\d.]+)\/([\d.]+)(?:\/[\d.]+)? ms/;

/**
 * What iputils `ping -n` printed (busybox's summary lines too): the statistics lines when
 * present, else the replies it printed before it was stopped; undefined when it printed
 * neither (it sent nothing). Duplicate replies (DUP!) are not replies.
 */
export function parsePingOutput(output: string): PingSummary | undefined {
  const seqs = new Set<string>();
  const rtts: number[] = [];
  let summary: PingSummary | undefined;
  for (const raw of output.split('\n')) {
    const line = raw.trim();
    const reply = REPLY.exec(line);
    if (reply) {
      if (!reply[3]!.includes('DUP!') && !seqs.has(reply[1]!)) {
        seqs.add(reply[1]!);
        rtts.push(Number(reply[2]));
      }
      continue;
    }
    const s = SUMMARY.exec(line);
    if (s) {
      summary = { sent: Number(s[1]), received: Number(s[2]) };
      continue;
    }
    const r = RTT.exec(line);
    if (r && summary) summary = { ...summary, rttMinMs: Number(r[1]), rttAvgMs: Number(r[2]), rttMaxMs: Number(r[3]) };
  }
  if (summary) {
    if (summary.received > 0 && summary.rttAvgMs === undefined && rtts.length > 0)
      return { ...summary, ...rttsOf(rtts) };
    return summary;
  }
  // Killed before its summary: the replies it printed (it sent at least as many).
  if (rtts.length === 0) return undefined;
  return { sent: rtts.length, received: rtts.length, ...rttsOf(rtts) };
}

function rttsOf(rtts: number[]): Pick<PingSummary, 'rttMinMs' | 'rttAvgMs' | 'rttMaxMs'> {
  const sum = rtts.reduce((a, b) => a + b, 0);
  return {
    rttMinMs: Math.min(...rtts),
    rttAvgMs: Math.round((sum / rtts.length) * 1000) / 1000,
    rttMaxMs: Math.max(...rtts),
  };
}

/** The arguments of one run of iputils ping: numeric output, the family, no shell ever. */
export function pingArgs(req: Omit<PingRequest, 'signal'>): string[] {
  return [
    '-n',
    req.family === 6 ? '-6' : '-4',
    '-c',
    String(req.count),
    // NOTE: -W 0 means "wait for ever" to iputils: never less than a tenth of a second.
    '-W',
    seconds(Math.max(100, req.waitMs)),
    '-i',
    seconds(req.intervalMs),
    // "--" so that no address could ever be read as an option (it is an IP literal anyway).
    '--',
    req.address,
  ];
}

function seconds(ms: number): string {
  return (Math.round(ms) / 1000).toFixed(3);
}

/**
 * The ping program to run: RUNNER_PING_PATH as an absolute path, or looked up in PATH (as
 * execFile would); undefined when there is no executable file there. NOTE: PATH is the
 * operating system's search path, read here as execFile itself reads it, not configuration.
 */
export async function findPing(path: string, envPath = process.env['PATH'] ?? ''): Promise<string | undefined> {
  const candidates =
    isAbsolute(path) || path.includes('/')
      ? [path]
      : envPath
          .split(delimiter)
          .filter(Boolean)
          .map((d) => join(d, path));
  for (const c of candidates) {
    try {
      await access(c, constants.X_OK);
      return c;
    } catch {
      // not this one
    }
  }
  return undefined;
}

/**
 * The system ping at `path` (an executable found by findPing). Its output is bounded; at
 * the request's abort it gets SIGINT, prints its summary and exits (SIGKILL if it does not).
 */
export function systemPinger(path: string): Pinger {
  return {
    ping(req) {
      return new Promise((resolve) => {
        let aborted = false;
        let killer: NodeJS.Timeout | undefined;
        const child = execFile(
          path,
          pingArgs(req),
          { maxBuffer: MAX_OUTPUT_BYTES, encoding: 'utf8', env: { LC_ALL: 'C', PATH: '/usr/bin:/bin' } },
          (err, stdout, stderr) => {
            clearTimeout(killer);
            req.signal.removeEventListener('abort', onAbort);
            const summary = parsePingOutput(stdout);
            if (summary) return resolve({ ok: true, aborted, ...summary });
            const why = firstLine(stderr) || (err ? err.message : 'ping printed no statistics');
            resolve({ ok: false, aborted, reason: why.slice(0, 300) });
          },
        );
        const onAbort = (): void => {
          aborted = true;
          child.kill('SIGINT');
          killer = setTimeout(() => child.kill('SIGKILL'), KILL_GRACE_MS);
        };
        if (req.signal.aborted) onAbort();
        else req.signal.addEventListener('abort', onAbort, { once: true });
      });
    },
  };
}

function firstLine(s: string): string {
  return (
    s
      .split('\n')
      .map((l) => l.trim())
      .find(Boolean) ?? ''
  );
}

/** A pinger that sends nothing: the runner found no ping program at start (RUNNER_PING_PATH). */
export function missingPinger(path: string): Pinger {
  return {
    ping: () =>
      Promise.resolve({
        ok: false,
        aborted: false,
        reason: `no ping program at ${path} (RUNNER_PING_PATH): install iputils-ping`,
      }),
  };
}
