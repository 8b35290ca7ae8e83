import { LIMITS } from '@telemetry/contract/limits';
import {
  resolveOptions,
  trackProblem,
  type ResolvedOptions,
  type TelemetryError,
  type TelemetryOptions,
  type TelemetryStats,
  type TrackedEvent,
} from './options.js';
import { Identity, userIdProblem } from './identity.js';
import { backoffMs, retryAfterMs } from './retry.js';
import { EventStore, ownerOf } from './store.js';
import { uuidv7Factory } from './uuid.js';

/**
 * Browsers cap the bytes of all keepalive requests and beacons in flight together at 64 KiB.
 * An ordinary request takes at most half, so that a page leaving mid-request has room left.
 */
const MAX_REQUEST_BYTES = 64 * 1024;
const BATCH_BYTES = MAX_REQUEST_BYTES / 2;
/** A request that has not answered by then counts as failed (a stalled mobile connection). */
const REQUEST_TIMEOUT_MS = 30_000;
/** `{"events":[` … `],"sent_at":"2026-11-23T10:00:00.000Z"}` */
const ENVELOPE_BYTES = 64;
/** Room left in a stored event for what the gateway adds (ids, times) under its own 64 KiB. */
const MAX_EVENT_BYTES = LIMITS.maxEventBytes - 4096;
/** How often an idle page looks for events that a closed tab left behind. */
const SCAN_EVERY_MS = 10_000;
/**
 * What a leaving page sent is sent again by another page only after this (stored per page as
 * `f.<page>`): its answer was never read, but it most likely arrived.
 */
const LEAVE_GRACE_MS = 30_000;

type Outcome = 'next' | 'wait';
interface Batch {
  keys: string[];
  events: TrackedEvent[];
  body: string;
  bytes: number;
}

/**
 * One page's sender. Events wait in localStorage, one key each, under the id of the page
 * (the owner) that tracked them. A page holds a Web Lock named after itself for its whole
 * life, and sends only events whose owner's lock it holds: its own, and those of closed
 * pages, whose locks it takes over. The browser grants each lock to one page at a time, so
 * two tabs never send the same event; after a tab closes, its events go with the next page
 * that takes its lock. Where the Web Locks API is missing, a page adopts every other page's
 * events at start (a live tab's may then be sent twice; the gateway stores them once).
 */
export class TelemetryClient {
  private readonly store: EventStore;
  private readonly url: string;
  private readonly owner: string;
  private readonly own = new Set<string>();
  /** Events in a request whose answer is awaited (Infinity), or beaconed (until when). */
  private readonly busy = new Map<string, number>();
  private readonly enc = new TextEncoder();
  private readonly newId: () => string;
  private readonly identity: Identity;
  private readonly o: ResolvedOptions;
  private maxEvents: number = LIMITS.maxEventsPerRequest;
  private failures = 0;
  private notBefore = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timerAt = Infinity;
  private sending: Promise<void> | undefined;
  private lastScan = 0;
  private leaving = false;
  /** Bytes of keepalive requests in flight (the browser's shared 64 KiB). */
  private inflightBytes = 0;
  /** Releases of the Web Locks this page holds, by owner. */
  private readonly releases = new Map<string, () => void>();
  private ready: Promise<void>;
  private isReady: () => void = () => undefined;

  constructor(
    options: TelemetryOptions,
    private readonly w: Window = window,
  ) {
    this.o = resolveOptions(options);
    const { key, endpoint } = this.o;
    this.ready = new Promise((resolve) => (this.isReady = resolve));
    const base = endpoint.replace(/\/+$/, '');
    this.url = `${base}/api/telemetry/events?key=${encodeURIComponent(key)}`;
    const prefix = `tlm1.${fnv1a(`${base}\n${key}`)}.`;
    this.store = new EventStore(prefix, () => w.localStorage);
    const bytes = w.crypto.getRandomValues.bind(w.crypto);
    this.newId = uuidv7Factory(Date.now, bytes);
    this.identity = new Identity(
      this.o.persistence === 'memory' ? new EventStore(prefix, () => undefined) : this.store,
      this.newId,
    );
    this.owner = [...bytes(new Uint8Array(6))].map((b) => (b + 256).toString(16).slice(1)).join('');
    this.claim(this.owner);
    w.addEventListener('visibilitychange', () => {
      if (w.document.visibilityState === 'hidden') this.leave(false);
    });
    w.addEventListener('pagehide', () => {
      this.leaving = true;
      this.leave(true);
      // A page that holds a Web Lock is kept out of the back/forward cache: let them go, and
      // take this page's own again if it comes back.
      // (What this page tracks from now on still goes by beacon: it keeps its list of owners.)
      for (const release of this.releases.values()) release();
      this.releases.clear();
    });
    w.addEventListener('pageshow', (e) => {
      if (!e.persisted) return;
      this.leaving = false;
      this.own.clear();
      this.claim(this.owner);
    });
    w.addEventListener('online', () => void this.pump());
    void this.scan();
  }

  /** Queues an event; returns its id, or undefined (and tells `onError`) when it is invalid. */
  track(category: string, payload: Record<string, unknown> = {}, time: Date | number = Date.now()): string | undefined {
    const at = new Date(time);
    const event: TrackedEvent = {
      source: this.o.source,
      category,
      payload,
      id: this.newId(),
      timestamp: Number.isFinite(+at) ? at.toISOString() : String(time),
      anonymous_id: this.identity.anonymousId(),
      user_id: this.identity.userId(),
    };
    let problem = trackProblem(category, payload, at);
    let json = '';
    if (!problem) {
      try {
        json = JSON.stringify(event);
        if (this.bytes(json) > MAX_EVENT_BYTES) problem = `an event may take at most ${MAX_EVENT_BYTES} bytes`;
      } catch {
        problem = 'payload must be JSON (no cycles, no BigInt)';
      }
    }
    if (problem) {
      this.report({ status: 0, code: 'INVALID_EVENT', message: problem, events: [event] });
      return undefined;
    }
    const keys = this.store.eventKeys();
    this.drop(keys, keys.length + 1 - this.o.maxQueuedEvents);
    // The storage is full (other data of the site, or big events): make room, oldest first,
    // rather than keep the new event in this page's memory only.
    for (let tries = 0; !this.store.set(`${this.store.prefix}e.${this.owner}.${event.id}`, json) && tries < 3; tries++)
      this.drop(this.store.eventKeys(), 1 + (tries << 2));
    if (this.leaving) this.leave(true);
    else this.schedule(this.sendable().length >= this.o.batchSize ? 0 : this.o.flushIntervalMs);
    return event.id;
  }

  /**
   * Sets the user id of every event tracked from now on (Segment's and PostHog's `identify`);
   * false (and `onError` told, code INVALID_USER_ID) when it is not 1 to 256 characters
   * without control characters.
   */
  identify(userId: string): boolean {
    const problem = userIdProblem(userId);
    if (problem) this.report({ status: 0, code: 'INVALID_USER_ID', message: problem, events: [] });
    else this.identity.identify(userId);
    return !problem;
  }

  /** Forgets the user id and the anonymous id (a log-out): later events are a new visitor's. */
  reset(): void {
    this.identity.reset();
  }

  /** Who the next event is about. */
  user(): { anonymousId: string; userId: string | undefined } {
    return { anonymousId: this.identity.anonymousId(), userId: this.identity.userId() };
  }

  /** Sends what waits now; resolves when it is sent, or kept for a retry (nothing is dropped). */
  async flush(): Promise<void> {
    // This page's lock is granted within milliseconds; until then it may send nothing.
    await Promise.race([this.ready, new Promise((resolve) => setTimeout(resolve, 1000))]);
    await this.sending;
    await this.pump();
  }

  stats(): TelemetryStats {
    return { queued: this.store.eventKeys().length, dropped: this.store.number('d') };
  }

  /** Drops the `n` oldest of `keys` and counts them. */
  private drop(keys: string[], n: number): void {
    if (n <= 0) return;
    for (const k of keys.slice(0, n)) {
      this.store.remove(k);
      this.busy.delete(k);
    }
    this.store.setNumber('d', this.store.number('d') + Math.min(n, keys.length));
  }

  /** Sends events of owned pages, one request at a time, until none is left or a wait is due. */
  private pump(): Promise<void> {
    this.sending ??= this.drain().finally(() => (this.sending = undefined));
    return this.sending;
  }

  private async drain(): Promise<void> {
    for (;;) {
      const wait = Math.max(this.notBefore, this.store.number('r')) - Date.now();
      if (wait > 0) return this.schedule(wait);
      if (this.w.navigator.onLine === false) return;
      const batch = this.batch(BATCH_BYTES);
      if (!batch) return;
      if ((await this.post(batch)) === 'wait') return this.schedule(this.notBefore - Date.now());
    }
  }

  private async post(batch: Batch): Promise<Outcome> {
    for (const k of batch.keys) this.busy.set(k, Infinity);
    this.inflightBytes += batch.bytes;
    try {
      // A string body is text/plain: a "simple" request, no CORS preflight (which a closing
      // page could not finish). keepalive lets it outlive the page, like a beacon.
      const res = await fetch(this.url, {
        method: 'POST',
        body: batch.body,
        keepalive: true,
        credentials: 'omit',
        signal: typeof AbortSignal.timeout === 'function' ? AbortSignal.timeout(REQUEST_TIMEOUT_MS) : null,
      });
      return await this.answer(res, batch);
    } catch {
      return this.fail(undefined);
    } finally {
      this.inflightBytes -= batch.bytes;
      for (const k of batch.keys) this.busy.delete(k);
    }
  }

  private async answer(res: Response, batch: Batch): Promise<Outcome> {
    const s = res.status;
    if (s >= 200 && s < 300) {
      this.failures = 0;
      for (const k of batch.keys) this.store.remove(k);
      return 'next';
    }
    if (s === 408 || s === 429 || s >= 500) {
      const after = s === 429 || s === 503 ? retryAfterMs(res.headers.get('Retry-After'), Date.now()) : undefined;
      // Every page of the site waits for the server's time, not only this one.
      if (after !== undefined) this.store.setNumber('r', Date.now() + after);
      return this.fail(after);
    }
    const body = (await res.json().catch(() => ({}))) as {
      code?: string;
      error?: string;
      details?: { invalid_events?: unknown };
    };
    const named = body.details?.invalid_events;
    let drop = Array.isArray(named) ? batch.keys.filter((_, i) => named.includes(i)) : [];
    if ((s === 400 || s === 413) && drop.length === 0 && batch.keys.length > 1) {
      // A refusal of the whole request (fewer events per request on this gateway, or one bad
      // event it did not name): send halves until the one to blame stands alone.
      this.maxEvents = Math.max(1, batch.keys.length >> 1);
      return 'next';
    }
    if (drop.length === 0) drop = batch.keys;
    this.report({
      status: s,
      code: body.code ?? `HTTP_${s}`,
      message: body.error ?? res.statusText,
      events: batch.events.filter((_, i) => drop.includes(batch.keys[i]!)),
    });
    for (const k of drop) this.store.remove(k);
    return 'next';
  }

  private fail(afterMs: number | undefined): Outcome {
    this.failures++;
    // Never sooner than the backoff: a "Retry-After: 0" from a proxy must not make a loop.
    const backoff = backoffMs(this.failures, this.o.retryMinMs, this.o.retryMaxMs, Math.random);
    this.notBefore = Date.now() + Math.max(afterMs ?? 0, backoff);
    return 'wait';
  }

  /** The oldest sendable events, within `maxBytes` and the request limits, or undefined. */
  private batch(maxBytes: number): Batch | undefined {
    const keys: string[] = [];
    const events: TrackedEvent[] = [];
    const parts: string[] = [];
    let size = ENVELOPE_BYTES;
    for (const k of this.sendable()) {
      const v = this.store.get(k);
      let e: TrackedEvent;
      try {
        e = JSON.parse(v ?? '') as TrackedEvent;
      } catch {
        // Not ours any more (another script wrote there): nothing to send.
        this.store.remove(k);
        continue;
      }
      const n = this.bytes(v!) + 1;
      if (keys.length >= this.maxEvents || size + n > maxBytes) break;
      keys.push(k);
      events.push(e);
      parts.push(v!);
      size += n;
    }
    if (keys.length === 0) return undefined;
    const body = `{"events":[${parts.join(',')}],"sent_at":"${new Date().toISOString()}"}`;
    return { keys, events, body, bytes: size };
  }

  /** Keys of events this page may send now: owned, in no request or recent beacon, and not left by a page just now. */
  private sendable(): string[] {
    const now = Date.now();
    for (const [k, until] of this.busy) if (until <= now) this.busy.delete(k);
    const held = new Set([...this.own].filter((o) => o === this.owner || !(this.store.number(`f.${o}`) > now)));
    return this.store.eventKeys().filter((k) => held.has(ownerOf(k)) && !this.busy.has(k));
  }

  /**
   * The page is hidden or going away. A keepalive fetch outlives the page and, when the page
   * stays (a tab switch), its answer is still read, so nothing is sent twice. While one is in
   * flight, or when the page is leaving, the rest goes by sendBeacon, within what is left of
   * the browser's 64 KiB. Neither answer is read by a page that is gone: the events stay
   * stored, and another page sends them again after LEAVE_GRACE_MS if they are still there.
   */
  private leave(unloading: boolean): void {
    if (this.store.number('r') > Date.now() || this.w.navigator.onLine === false) return;
    // A page whose requests fail has likely not reached the gateway now either: no grace.
    if (this.failures === 0) for (const o of this.own) this.store.setNumber(`f.${o}`, Date.now() + LEAVE_GRACE_MS);
    if (!unloading && !this.sending) {
      if (this.notBefore <= Date.now()) void this.pump();
      return;
    }
    const batch = this.batch(MAX_REQUEST_BYTES - this.inflightBytes);
    if (!batch) return;
    let sent = false;
    try {
      sent = this.w.navigator.sendBeacon(this.url, batch.body);
    } catch {
      // A beacon over the browser's quota throws in some browsers, returns false in others.
    }
    if (sent) for (const k of batch.keys) this.busy.set(k, Date.now() + LEAVE_GRACE_MS);
  }

  /** Takes the lock of `owner` (this page's, or a closed page's) and, once granted, sends its events. */
  private claim(owner: string): void {
    const mine = owner === this.owner;
    const own = (): void => {
      this.own.add(owner);
      if (mine) this.isReady();
      this.schedule(0);
    };
    const locks = this.w.navigator.locks as LockManager | undefined;
    if (!locks) return own();
    locks
      .request(`${this.store.prefix}${owner}`, { ifAvailable: !mine }, (lock) => {
        if (!lock) return undefined;
        own();
        // Held until the page hides for good (pagehide) or goes.
        return new Promise<void>((resolve) => this.releases.set(owner, resolve));
      })
      // No lock manager here (an opaque origin): this page sends its own events all the same.
      .catch(() => mine && own());
  }

  /** Takes over the events of pages that are gone (their lock is neither held nor wanted). */
  private async scan(): Promise<void> {
    const first = this.lastScan === 0;
    this.lastScan = Date.now();
    for (const k of this.store.keysUnder('f.'))
      if (!(this.store.number(k.slice(this.store.prefix.length)) > Date.now())) this.store.remove(k);
    const owners = new Set(this.store.eventKeys().map(ownerOf));
    for (const o of this.own) owners.delete(o);
    owners.delete(this.owner);
    if (owners.size === 0) return;
    const locks = this.w.navigator.locks as LockManager | undefined;
    if (!locks) {
      if (first) for (const o of owners) this.own.add(o);
      return;
    }
    try {
      const state = await locks.query();
      const taken = new Set([...(state.held ?? []), ...(state.pending ?? [])].map((l) => l.name));
      for (const o of owners) if (!taken.has(`${this.store.prefix}${o}`)) this.claim(o);
    } catch {
      // No lock manager in this context (an opaque origin): leave them to another page.
    }
  }

  private schedule(ms: number): void {
    const at = Date.now() + Math.max(0, ms);
    if (this.timer !== undefined && this.timerAt <= at) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.timerAt = Infinity;
      const scan = Date.now() - this.lastScan >= SCAN_EVERY_MS ? this.scan() : Promise.resolve();
      void scan.then(() => this.pump()).then(() => this.schedule(SCAN_EVERY_MS));
    }, at - Date.now());
  }

  private report(e: TelemetryError): void {
    try {
      this.o.onError?.(e);
    } catch {
      // The page's callback failing is no reason to stop sending.
    }
  }

  private bytes(s: string): number {
    return this.enc.encode(s).length;
  }
}

/** FNV-1a, 32 bits, as 8 hex digits: a short, stable name for an endpoint and key. */
function fnv1a(s: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return (h >>> 0).toString(16).padStart(8, '0');
}
