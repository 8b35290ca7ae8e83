import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { Reader, type Response } from 'mmdb-lib';
import ipModule from 'mmdb-lib/lib/ip.js';
import { parseMetadata, type Metadata } from 'mmdb-lib/lib/metadata.js';

/**
 * mmdb-lib's own address parsing and bit order. A CommonJS module with `exports.default`:
 * Node's loader hands that over as `.default` of the import, bundlers (tsx) as the import.
 */
type IpLib = typeof ipModule.default;
const ip: IpLib = 'parse' in ipModule ? (ipModule as unknown as IpLib) : ipModule.default;

/**
 * An MMDB file read by mmdb-lib with its search tree loaded page by page, as lookups reach
 * it, instead of read whole at start-up.
 *
 * mmdb-lib reads from one Buffer holding the file. Here that Buffer is allocated zero-filled
 * (large allocations come from the kernel as untouched pages, which take no memory until
 * written) and filled in parts: at start the metadata and the data section (the records,
 * about a fifth of DB-IP's files), the search tree (the rest) one 4 KiB page at a time,
 * the first time a lookup walks through it. Before mmdb-lib walks the tree for an address,
 * `get` walks it the same way (mmdb-lib's own address parsing and bit order) and reads
 * every page that walk needs. So the process holds only the parts of the tree its lookups
 * have reached (never more than reading the file whole), each page is read from the file
 * once, and answers are mmdb-lib's own from the same bytes.
 */
export class PagedMmdb {
  readonly reader: Reader<Response>;
  /**
   * mmdb-lib's resolveDataPointer (TypeScript-private in its typings, a plain method at run
   * time): the record at a tree pointer, decoded through the reader's cache. The unit test
   * holds every answer to Reader.get over the whole file.
   */
  private readonly decode: (pointer: number) => Response | null;
  readonly metadata: Metadata;
  private readonly db: Buffer;
  /** 1 for each page of the file already read into `db`. */
  private readonly loaded: Uint8Array;
  private readonly treeEnd: number;
  private readonly ipv4Start: number;
  private pagesRead = 0;

  static readonly PAGE_BITS = 12;
  static readonly PAGE = 1 << PagedMmdb.PAGE_BITS;
  /** The most bytes mmdb-lib looks through, from the end, for the metadata (the format's limit). */
  static readonly METADATA_MAX = 128 * 1024;

  constructor(
    private readonly fd: number,
    options: { cache?: { get(key: string | number): unknown; set(key: string | number, value: unknown): void } } = {},
  ) {
    const size = fstatSync(fd).size;
    this.db = Buffer.alloc(size);
    this.loaded = new Uint8Array((size >>> PagedMmdb.PAGE_BITS) + 1);
    this.ensure(Math.max(0, size - PagedMmdb.METADATA_MAX), size);
    this.metadata = parseMetadata(this.db);
    this.treeEnd = this.metadata.searchTreeSize;
    // The data section (and the metadata after it): every record a lookup can decode.
    this.ensure(Math.min(this.treeEnd, size), size);
    // mmdb-lib's constructor walks to where IPv4 starts in an IPv6 tree: its nodes first.
    this.ipv4Start = this.walkToIpv4();
    this.reader = new Reader<Response>(this.db, options.cache ? { cache: options.cache } : {});
    const resolve = (this.reader as unknown as { resolveDataPointer?: (pointer: number) => Response | null })
      .resolveDataPointer;
    if (typeof resolve !== 'function') throw new Error('mmdb-lib has no resolveDataPointer: check its version');
    this.decode = resolve.bind(this.reader);
  }

  /** Opens `file` (closed again if it is not an MMDB database). */
  static open(file: string, options: ConstructorParameters<typeof PagedMmdb>[1] = {}): PagedMmdb {
    const fd = openSync(file, 'r');
    try {
      return new PagedMmdb(fd, options);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
  }

  /**
   * mmdb-lib's answer for `address` (`Reader.get`): the same walk through the tree, reading
   * its pages first, then mmdb-lib's decoding of the record it ends at, with its cache.
   */
  get(address: string): Response | null {
    const pointer = this.walk(ip.parse(address));
    return pointer === null ? null : this.decode(pointer);
  }

  /** Pages of the file read so far and their bytes (the tree's share of memory). */
  stats(): { pagesRead: number; bytesRead: number; fileBytes: number } {
    return { pagesRead: this.pagesRead, bytesRead: this.pagesRead * PagedMmdb.PAGE, fileBytes: this.db.length };
  }

  close(): void {
    closeSync(this.fd);
  }

  /**
   * mmdb-lib's findAddressInTree, reading each node's page before it reads the node: the
   * record's pointer, or null when the address is not in the tree.
   */
  private walk(raw: number[]): number | null {
    const { nodeCount, nodeByteSize } = this.metadata;
    const bits = raw.length * 8;
    let node = raw.length === 4 ? this.ipv4Start : 0;
    for (let depth = 0; depth < bits && node < nodeCount; depth++) {
      node = this.child(node * nodeByteSize, ip.bitAt(raw, depth));
    }
    return node > nodeCount ? node : null;
  }

  /** mmdb-lib's ipv4Start: 96 left turns from the root of an IPv6 tree. */
  private walkToIpv4(): number {
    if (this.metadata.ipVersion === 4) return 0;
    let node = 0;
    for (let i = 0; i < 96 && node < this.metadata.nodeCount; i++) {
      node = this.child(node * this.metadata.nodeByteSize, 0);
    }
    return node;
  }

  /** A node's left (0) or right (1) record, as mmdb-lib's walker reads it. */
  private child(offset: number, bit: number): number {
    const db = this.db;
    this.ensure(offset, offset + this.metadata.nodeByteSize);
    switch (this.metadata.recordSize) {
      case 24:
        return bit ? db.readUIntBE(offset + 3, 3) : db.readUIntBE(offset, 3);
      case 28:
        return bit
          ? ((db[offset + 3]! & 0x0f) << 24) | db.readUIntBE(offset + 4, 3)
          : ((db[offset + 3]! & 0xf0) << 20) | db.readUIntBE(offset, 3);
      default:
        return bit ? db.readUInt32BE(offset + 4) : db.readUInt32BE(offset);
    }
  }

  /** Reads every page of [start, end) not read yet (each run of them in one read). */
  private ensure(start: number, end: number): void {
    const size = this.db.length;
    if (end > size) end = size;
    if (start >= end) return;
    const bits = PagedMmdb.PAGE_BITS;
    const last = (end - 1) >>> bits;
    let p = start >>> bits;
    while (p <= last) {
      if (this.loaded[p] === 1) {
        p++;
        continue;
      }
      let q = p;
      while (q < last && this.loaded[q + 1] !== 1) q++;
      this.read(p * PagedMmdb.PAGE, Math.min((q + 1) * PagedMmdb.PAGE, size));
      this.loaded.fill(1, p, q + 1);
      this.pagesRead += q + 1 - p;
      p = q + 1;
    }
  }

  private read(from: number, to: number): void {
    let at = from;
    while (at < to) {
      const n = readSync(this.fd, this.db, at, to - at, at);
      if (n === 0) throw new Error(`the file ended at ${at} of ${this.db.length} bytes`);
      at += n;
    }
  }
}
