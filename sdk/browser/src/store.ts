/**
 * Where unsent events wait: localStorage, so that they outlive the tab, with a memory map
 * beside it for when the storage is missing, disabled or full (then they live as long as
 * the page). Every event has a key of its own, written once and removed once: tabs never
 * rewrite a shared list, so no tab can lose another tab's event to a lost update.
 *
 * Keys: `<prefix>e.<owner>.<event id>` for events (the owner is the page that tracked or
 * adopted them, see client.ts), `<prefix>d` for the count of dropped events and
 * `<prefix>r` for the time before which no page may send (a 429 or 503's Retry-After).
 */
export class EventStore {
  private readonly memory = new Map<string, string>();
  private readonly local: Storage | undefined;

  constructor(
    readonly prefix: string,
    storage: () => Storage | undefined,
  ) {
    let s: Storage | undefined;
    try {
      s = storage();
      // Reading can throw too (storage disabled by the user or by a sandbox).
      s?.getItem(prefix);
    } catch {
      s = undefined;
    }
    this.local = s;
  }

  get(key: string): string | null {
    const m = this.memory.get(key);
    if (m !== undefined) return m;
    try {
      return this.local?.getItem(key) ?? null;
    } catch {
      return null;
    }
  }

  /** False when the value could be kept in memory only. */
  set(key: string, value: string): boolean {
    try {
      if (this.local) {
        this.local.setItem(key, value);
        this.memory.delete(key);
        return true;
      }
    } catch {
      // Quota exceeded or storage gone: keep it in this page.
    }
    this.memory.set(key, value);
    return false;
  }

  remove(key: string): void {
    this.memory.delete(key);
    try {
      this.local?.removeItem(key);
    } catch {
      // Nothing more to do: the next page retries an event it still finds.
    }
  }

  /** The keys of this store's events, oldest first (UUIDv7 ids sort by time). */
  eventKeys(): string[] {
    return this.keysUnder('e.').sort((a, b) => (idOf(a) < idOf(b) ? -1 : idOf(a) > idOf(b) ? 1 : 0));
  }

  /** Every key of this store that begins with `<prefix><head>`. */
  keysUnder(head: string): string[] {
    head = this.prefix + head;
    const out = new Set<string>();
    try {
      const s = this.local;
      for (let i = 0; s && i < s.length; i++) {
        const k = s.key(i);
        if (k?.startsWith(head)) out.add(k);
      }
    } catch {
      // As above: the memory map still counts.
    }
    for (const k of this.memory.keys()) if (k.startsWith(head)) out.add(k);
    return [...out];
  }

  number(name: string): number {
    return Number(this.get(this.prefix + name)) || 0;
  }

  setNumber(name: string, n: number): void {
    this.set(this.prefix + name, String(n));
  }
}

/** `<prefix>e.<owner>.<id>` → owner. */
export function ownerOf(key: string): string {
  const parts = key.split('.');
  return parts[parts.length - 2] ?? '';
}

/** `<prefix>e.<owner>.<id>` → id. */
export function idOf(key: string): string {
  return key.slice(key.lastIndexOf('.') + 1);
}
