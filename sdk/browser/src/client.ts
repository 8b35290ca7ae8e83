import { LIMITS, NAME_PATTERN } from '@telemetry/contract/limits';
import { backoffMs, retryAfterMs } from './retry.js';
import { EventStore, ownerOf } from './store.js';
import { uuidv7Factory } from './uuid.js';

export interface TelemetryOptions {
  /** A telemetry access key (`tk_…`). It is sent as `?key=`: a page cannot hide it anyway. */
  key: string;
  /** The gateway's base URL, e.g. `https://collect.example`. */
  endpoint: string;
  /** The `source` of every event, e.g. the shop's host name. */
  source: string;
  /** Send as soon as this many events wait (default 20). */
  batchSize?: number;
  /** Send an event at most this long after it was tracked (default 2000 ms). */
  flushIntervalMs?: number;
  /** Unsent events kept (default 1000); beyond it the oldest are dropped, and counted. */
  maxQueuedEvents?: number;
  /** First retry delay after a failure (default 1000 ms); doubled per failure, jittered. */
  retryMinMs?: number;
  /** Longest retry delay (default 60000 ms). */
  retryMaxMs?: number;
  /** Told about events dropped for good: refused by the gateway (a 4xx other than 408 and 429) or invalid at `track`. */
  onError?: (error: TelemetryError) => void;
}

/** One event as the gateway receives it. */
export interface TrackedEvent {
  source: string;
  category: string;
  payload: Record<string, unknown>;
  /** UUIDv7: every retry carries it, so the gateway stores the event once. */
  id: string;
  /** When it was tracked, by this browser's clock (the request's `sent_at` corrects the skew). */
  timestamp: string;
}

export interface TelemetryError {
  /** The gateway's HTTP status; 0 when `track` refused the event before sending it. */
  status: number;
  /** The gateway's error code (docs/errors.md), or `INVALID_EVENT` from `track`. */
  code: string;
  message: string;
  /** The events dropped. */
  events: TrackedEvent[];
}

export interface TelemetryStats {
  /** Unsent events of this site and key, in every tab. */
  queued: number;
  /** Events dropped because the queue was full, since the storage was new. */
  dropped: number;
}

/** Browsers cap a keepalive request or a beacon (all of them in flight, in fact) at 64 KiB. */
const MAX_REQUEST_BYTES = 64 * 1024;
/** `{"events":[` … `],"sent_at":"2026-11-23T10:00:00.000Z"}` */
const ENVELOPE_BYTES = 64;
/** Room left in a stored event for what the gateway adds (ids, times) under its own 64 KiB. */
const MAX_EVENT_BYTES = LIMITS.maxEventBytes - 4096;
/** How often an idle page looks for events that a closed tab left behind. */
const SCAN_EVERY_MS = 10_000;
/** A beacon's answer is never seen: its events are sent again after this, if still here. */
const BEACON_GRACE_MS = 30_000;
const NAME = new RegExp(NAME_PATTERN);

type Outcome = 'next' | 'wait';
interface Batch {
  keys: string[];
  events: TrackedEvent[];
  body: string;
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
  private readonly o: Required<Omit<TelemetryOptions, 'onError'>> & Pick<TelemetryOptions, 'onError'>;
  private maxEvents: number = LIMITS.maxEventsPerRequest;
  private failures = 0;
  private notBefore = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timerAt = Infinity;
  private sending: Promise<void> | undefined;
  private lastScan = 0;

  constructor(
    options: TelemetryOptions,
    private readonly w: Window = window,
  ) {
    const { key, endpoint, source } = options;
    if (typeof key !== 'string' || key === '') throw new TypeError('Telemetry: key is required');
    if (typeof endpoint !== 'string' || !/^https?:\/\/[^/]/.test(endpoint))
      throw new TypeError('Telemetry: endpoint must be an http(s) URL');
    if (typeof source !== 'string' || !NAME.test(source) || source.length > LIMITS.maxNameLength)
      throw new TypeError(`Telemetry: source must match ${NAME_PATTERN}`);
    this.o = {
      batchSize: 20,
      flushIntervalMs: 2000,
      maxQueuedEvents: 1000,
      retryMinMs: 1000,
      retryMaxMs: 60_000,
      ...options,
    };
    const base = endpoint.replace(/\/+$/, '');
    this.url = `${base}/api/telemetry/events?key=${encodeURIComponent(key)}`;
    this.store = new EventStore(`tlm1.${fnv1a(`${base}\n${key}`)}.`, () => w.localStorage);
    const bytes = w.crypto.getRandomValues.bind(w.crypto);
    this.newId = uuidv7Factory(Date.now, bytes);
    this.owner = [...bytes(new Uint8Array(6))].map((b) => (b + 256).toString(16).slice(1)).join('');
    this.claim(this.owner);
    w.addEventListener('visibilitychange', () => {
      if (w.document.visibilityState === 'hidden') this.leave(false);
    });
    w.addEventListener('pagehide', () => this.leave(true));
    w.addEventListener('online', () => void this.pump());
    void this.scan();
  }

  /** Queues an event; returns its id, or undefined (and tells `onError`) when it is invalid. */
  track(category: string, payload: Record<string, unknown> = {}, time: Date | number = Date.now()): string | undefined {
    const event: TrackedEvent = {
      source: this.o.source,
      category,
      payload,
      id: this.newId(),
      timestamp: new Date(time).toISOString(),
    };
    let problem =
      typeof category !== 'string' || !NAME.test(category) || category.length > LIMITS.maxNameLength
        ? `category must match ${NAME_PATTERN}, at most ${LIMITS.maxNameLength} characters`
        : typeof payload !== 'object' || payload === null || Array.isArray(payload)
          ? 'payload must be an object'
          : undefined;
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
    const over = keys.length + 1 - this.o.maxQueuedEvents;
    if (over > 0) {
      for (const k of keys.slice(0, over)) this.store.remove(k);
      this.store.setNumber('d', this.store.number('d') + over);
    }
    this.store.set(`${this.store.prefix}e.${this.owner}.${event.id}`, json);
    this.schedule(this.sendable().length >= this.o.batchSize ? 0 : this.o.flushIntervalMs);
    return event.id;
  }

  /** Sends what waits now; resolves when it is sent, or kept for a retry (nothing is dropped). */
  async flush(): Promise<void> {
    await this.sending;
    await this.pump();
  }

  stats(): TelemetryStats {
    return { queued: this.store.eventKeys().length, dropped: this.store.number('d') };
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
      const batch = this.batch();
      if (!batch) return;
      if ((await this.post(batch)) === 'wait') return this.schedule(this.notBefore - Date.now());
    }
  }

  private async post(batch: Batch): Promise<Outcome> {
    for (const k of batch.keys) this.busy.set(k, Infinity);
    try {
      // A string body is text/plain: a "simple" request, no CORS preflight (which a closing
      // page could not finish). keepalive lets it outlive the page, like a beacon.
      const res = await fetch(this.url, { method: 'POST', body: batch.body, keepalive: true, credentials: 'omit' });
      return await this.answer(res, batch);
    } catch {
      return this.fail(undefined);
    } finally {
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
    if (s === 413 && drop.length === 0 && batch.keys.length > 1) {
      // The gateway takes fewer events per request than we sent: send fewer.
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
    this.notBefore =
      Date.now() + (afterMs ?? backoffMs(this.failures, this.o.retryMinMs, this.o.retryMaxMs, Math.random));
    return 'wait';
  }

  /** The oldest sendable events, within the request limits, or undefined. */
  private batch(): Batch | undefined {
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
      if (keys.length >= this.maxEvents || size + n > MAX_REQUEST_BYTES) break;
      keys.push(k);
      events.push(e);
      parts.push(v!);
      size += n;
    }
    if (keys.length === 0) return undefined;
    return { keys, events, body: `{"events":[${parts.join(',')}],"sent_at":"${new Date().toISOString()}"}` };
  }

  /** Keys of events this page may send now: owned, and in no request or recent beacon. */
  private sendable(): string[] {
    const now = Date.now();
    return this.store.eventKeys().filter((k) => this.own.has(ownerOf(k)) && !((this.busy.get(k) ?? 0) > now));
  }

  /**
   * The page is hidden or going away. A keepalive fetch outlives the page and, when the page
   * stays (a tab switch), its answer is still read, so nothing is sent twice. While one is in
   * flight, or when the page is leaving, the rest goes by sendBeacon; its answer is never
   * known, so its events stay stored and are sent again later (and stored once).
   */
  private leave(unloading: boolean): void {
    if (this.store.number('r') > Date.now() || this.w.navigator.onLine === false) return;
    if (!unloading && !this.sending) {
      this.notBefore = 0;
      void this.pump();
      return;
    }
    const batch = this.batch();
    if (!batch) return;
    let sent = false;
    try {
      sent = this.w.navigator.sendBeacon(this.url, batch.body);
    } catch {
      // A beacon over the browser's quota throws in some browsers, returns false in others.
    }
    if (sent) for (const k of batch.keys) this.busy.set(k, Date.now() + BEACON_GRACE_MS);
  }

  /** Takes the lock of `owner` (this page's, or a closed page's) and, once granted, sends its events. */
  private claim(owner: string): void {
    const locks = this.w.navigator.locks as LockManager | undefined;
    if (!locks) {
      this.own.add(owner);
      return;
    }
    locks
      .request(`${this.store.prefix}${owner}`, { ifAvailable: owner !== this.owner }, (lock) => {
        if (!lock) return undefined;
        this.own.add(owner);
        this.schedule(0);
        // Held for as long as this page lives; the browser releases it when the page goes.
        return new Promise<void>(() => undefined);
      })
      .catch(() => undefined);
  }

  /** Takes over the events of pages that are gone (their lock is neither held nor wanted). */
  private async scan(): Promise<void> {
    const first = this.lastScan === 0;
    this.lastScan = Date.now();
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
