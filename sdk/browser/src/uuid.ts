/**
 * UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then a 12-bit counter that keeps ids
 * of the same millisecond in order (method 1 of section 6.2), then 62 random bits. The
 * gateway derives the stored event id from it, and its time keeps every retry of an event
 * together in ClickHouse for ever (docs/clickhouse.md, "Reading without duplicates").
 */
export function uuidv7Factory(now: () => number, random: (bytes: Uint8Array) => Uint8Array): () => string {
  let lastMs = -1;
  let seq = 0;
  return () => {
    let ms = Math.max(now(), lastMs);
    const b = random(new Uint8Array(16));
    if (ms === lastMs) {
      seq++;
      // 4096 ids in one millisecond: borrow the next one, as the RFC allows.
      if (seq > 0xfff) {
        ms++;
        seq = 0;
      }
    } else {
      // Start low in the range so that the counter has room to grow.
      seq = ((b[6]! << 8) | b[7]!) & 0x7ff;
    }
    lastMs = ms;
    for (let i = 5; i >= 0; i--) {
      b[i] = ms % 256;
      ms = Math.floor(ms / 256);
    }
    b[6] = 0x70 | (seq >> 8);
    b[7] = seq & 0xff;
    b[8] = 0x80 | (b[8]! & 0x3f);
    let hex = '';
    for (const x of b) hex += (x + 256).toString(16).slice(1);
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  };
}
