import { createRequire } from 'node:module';

/**
 * node-zookeeper-client encodes and decodes every request and reply through a generic record class that
 * interprets each record's field list as it goes: a regular expression per vector or nested field, a
 * closure per field, a result object per field read, a fresh 8-byte ArrayBuffer for every 64-bit field
 * (a Stat holds six, made three times over per reply), a Buffer per string written. A lock's requests
 * cost it about 65 KB of garbage per contended acquisition, most of the client's allocation.
 *
 * This module compiles a class of baton's own for each record class of the client (`jute.protocol.*`,
 * `jute.data.*`) from the same field list, once: the same fields in the same order, the same bytes on
 * the wire, the same values read, the same chroot handling and the same errors for misuse. 64-bit fields
 * stay 8-byte Buffers. The compiled classes inherit from the client's, so that `instanceof` holds for
 * both; the client's own classes, and everything else of the client, are left as they are: baton uses
 * the compiled ones only for its own client's requests (direct.ts) and replies (replies.ts). If the
 * client's record layer is not the one this was written against, nothing is compiled and baton's client
 * works as it came. test/units/jute.test.ts checks every class against the client's own implementation.
 */

interface Attribute {
  readonly name: string;
  readonly type: string;
}

/** What the client's record classes look like from outside. */
export interface RecordLike {
  specification: readonly Attribute[];
  chrootPath: string | undefined;
  [field: string]: unknown;
  byteLength(): number;
  serialize(buffer: Buffer, offset: number): number;
  deserialize(buffer: Buffer, offset: number): number;
}
export type RecordClass = new (...args: unknown[]) => RecordLike;
export interface Jute {
  Request: { prototype: { header: RecordLike | null; payload: RecordLike | null; toBuffer(): Buffer } };
  protocol: Record<string, RecordClass>;
  data: Record<string, RecordClass>;
}

/** baton's compiled record classes, by the client's module and class names. */
export interface Records {
  readonly data: Readonly<Record<string, RecordClass>>;
  readonly protocol: Readonly<Record<string, RecordClass>>;
}

const require = createRequire(import.meta.url);

/** The field kinds of ZooKeeper's jute records. */
const enum Kind {
  Int,
  Long,
  Bytes,
  Text,
  Flag,
  Vector,
  Nested,
}

interface Field {
  readonly name: string;
  readonly kind: Kind;
  /** A vector's items. */
  readonly item?: Field;
  /** A nested record's class name in `jute.data`. */
  readonly nested?: string;
  /** A path the chroot is added to on the way out and taken from on the way in. */
  readonly path: boolean;
  /** A list of paths the chroot is added to on the way out (SetWatches). */
  readonly paths: boolean;
}

const WATCH_LISTS = new Set(['dataWatches', 'existWatches', 'childWatches']);
const SCALARS: Record<string, Kind> = {
  int: Kind.Int,
  long: Kind.Long,
  buffer: Kind.Bytes,
  ustring: Kind.Text,
  boolean: Kind.Flag,
};

/** The field as the client's record layer reads its type; undefined for a type it would not know either. */
function fieldOf(name: string, type: string): Field | undefined {
  const path = name === 'path';
  const paths = WATCH_LISTS.has(name);
  const scalar = SCALARS[type];
  if (scalar !== undefined) return { name, kind: scalar, path, paths };
  const vector = /^vector<([\w.]+)>$/.exec(type);
  if (vector !== null) {
    const item = fieldOf('', vector[1]!);
    return item === undefined ? undefined : { name, kind: Kind.Vector, item, path, paths };
  }
  const nested = /^data\.(\w+)$/.exec(type);
  if (nested !== null) return { name, kind: Kind.Nested, nested: nested[1]!, path, paths };
  return undefined;
}

/** The field list of each compiled class, for `blank`. */
const SPECIFICATIONS = new WeakMap<RecordClass, readonly Attribute[]>();

/**
 * A record of a compiled class made without its defaults (a fresh 8-byte buffer per 64-bit field, a
 * default record per nested one), for a record that is read next: every field is then set by the read.
 */
export function blank(Class: RecordClass): RecordLike {
  const record = Object.create(Class.prototype) as RecordLike;
  record.specification = SPECIFICATIONS.get(Class)!;
  record.chrootPath = undefined;
  return record;
}

/** Where a read stopped: set by `read`, so that reading a field makes no result object. */
let readEnd = 0;

class Compiler {
  /** The compiled `jute.data` classes, which nested fields are made of (filled as they are compiled). */
  readonly #data: Record<string, RecordClass>;
  readonly #record: RecordClass;

  constructor(record: RecordClass, data: Record<string, RecordClass>) {
    this.#data = data;
    this.#record = record;
  }

  /** The class compiled from `old`'s field list, or undefined if some field type is unknown. */
  compile(old: RecordClass): RecordClass | undefined {
    const specification = new old().specification;
    const fields: Field[] = [];
    for (const attribute of specification) {
      const field = fieldOf(attribute.name, attribute.type);
      if (field === undefined) return undefined;
      fields.push(field);
    }
    const compiler = this;
    const Compiled = function (this: RecordLike, ...args: unknown[]) {
      this.specification = specification;
      this.chrootPath = undefined;
      for (let i = 0; i < fields.length; i += 1) this[fields[i]!.name] = compiler.#initial(fields[i]!, args[i]);
    } as unknown as RecordClass;
    Compiled.prototype = Object.create(old.prototype, {
      constructor: { value: Compiled, writable: true, configurable: true },
    }) as RecordLike;
    SPECIFICATIONS.set(Compiled, specification);
    Object.assign(Compiled.prototype, {
      byteLength(this: RecordLike): number {
        let size = 0;
        for (const field of fields) size += sizeOf(field, outgoing(this, field));
        return size;
      },
      serialize(this: RecordLike, buffer: Buffer, offset: number): number {
        if (!Buffer.isBuffer(buffer)) throw new Error('buffer must an instance of Node.js Buffer class.');
        if (offset < 0 || offset >= buffer.length) throw new Error('offset: ' + offset + ' is out of buffer range.');
        const size = this.byteLength();
        if (offset + size > buffer.length) throw new Error('buffer does not have enough space.');
        for (const field of fields) offset = write(field, outgoing(this, field), buffer, offset);
        return size;
      },
      deserialize(this: RecordLike, buffer: Buffer, offset: number): number {
        if (!Buffer.isBuffer(buffer)) throw new Error('buffer must an instance of Node.js Buffer class.');
        if (offset < 0 || offset >= buffer.length) throw new Error('offset: ' + offset + ' is out of buffer range.');
        const start = offset;
        for (const field of fields) {
          let value = compiler.#read(field, buffer, offset);
          offset = readEnd;
          // As the client does: the chroot comes off a path read from the server.
          if (field.path && this.chrootPath)
            value = value === this.chrootPath ? '/' : (value as string).substring(this.chrootPath.length);
          this[field.name] = value;
        }
        return offset - start;
      },
    });
    return Compiled;
  }

  /** A field's value in a new record, from the constructor's argument as the client's records take it. */
  #initial(field: Field, arg: unknown): unknown {
    switch (field.kind) {
      case Kind.Int:
        return typeof arg === 'number' ? arg : 0;
      case Kind.Long: {
        const long = Buffer.alloc(8);
        if (Buffer.isBuffer(arg)) arg.copy(long);
        return long;
      }
      case Kind.Bytes:
        return Buffer.isBuffer(arg) ? Buffer.from(arg) : undefined;
      case Kind.Text:
        return typeof arg === 'string' ? arg : undefined;
      case Kind.Flag:
        return typeof arg === 'boolean' ? arg : false;
      case Kind.Vector:
        return Array.isArray(arg) ? arg : undefined;
      case Kind.Nested:
        return arg instanceof this.#record ? arg : new this.#data[field.nested!]!();
    }
  }

  /** Reads one field at `offset`; `readEnd` is then where it ended. */
  #read(field: Field, buffer: Buffer, offset: number): unknown {
    switch (field.kind) {
      case Kind.Int:
        readEnd = offset + 4;
        return buffer.readInt32BE(offset);
      case Kind.Long: {
        // Byte by byte: Buffer#copy of part of a buffer makes a view object per call. Past the end of a
        // reply cut short the bytes are zeros, as in the client's zero-filled buffer; an offset past
        // the end throws as its copy does. A buffer of its own, as the client's: not a slice of Node's
        // shared pool, which would keep 8 KiB alive per kept long and show other bytes through `.buffer`.
        if (offset > buffer.length) buffer.copy(Buffer.alloc(8), 0, offset, offset + 8);
        const long = Buffer.alloc(8);
        for (let i = 0; i < 8 && offset + i < buffer.length; i += 1) long[i] = buffer[offset + i]!;
        readEnd = offset + 8;
        return long;
      }
      case Kind.Bytes: {
        const length = buffer.readInt32BE(offset);
        if (length === -1) {
          readEnd = offset + 4;
          return undefined;
        }
        const bytes = Buffer.alloc(length);
        buffer.copy(bytes, 0, offset + 4, offset + 4 + length);
        readEnd = offset + 4 + length;
        return bytes;
      }
      case Kind.Text: {
        const length = buffer.readInt32BE(offset);
        readEnd = offset + 4 + (length === -1 ? 0 : length);
        return length === -1 ? undefined : buffer.toString('utf8', offset + 4, offset + 4 + length);
      }
      case Kind.Flag:
        readEnd = offset + 1;
        return buffer.readUInt8(offset) === 1;
      case Kind.Vector: {
        let count = buffer.readInt32BE(offset);
        offset += 4;
        if (count === -1) {
          readEnd = offset;
          return undefined;
        }
        const items: unknown[] = [];
        for (; count > 0; count -= 1) {
          items.push(this.#read(field.item!, buffer, offset));
          offset = readEnd;
        }
        readEnd = offset;
        return items;
      }
      case Kind.Nested: {
        // Made without its defaults: every field of it is read next, and they would be thrown away unseen.
        const nested = blank(this.#data[field.nested!]!);
        readEnd = offset + nested.deserialize(buffer, offset);
        return nested;
      }
    }
  }
}

/** A field's value as it goes on the wire: paths with the chroot in front. */
function outgoing(record: RecordLike, field: Field): unknown {
  const value = record[field.name];
  if (field.path) return withChroot(record, value);
  if (field.paths && Array.isArray(value)) return value.map((path: unknown) => withChroot(record, path));
  return value;
}

function withChroot(record: RecordLike, path: unknown): unknown {
  if (!record.chrootPath) return path;
  if (path === '/') return record.chrootPath;
  return record.chrootPath + (path as string);
}

function sizeOf(field: Field, value: unknown): number {
  switch (field.kind) {
    case Kind.Int:
      return 4;
    case Kind.Long:
      return 8;
    case Kind.Bytes:
      return Buffer.isBuffer(value) ? 4 + value.length : 4;
    case Kind.Text:
      return typeof value === 'string' ? 4 + Buffer.byteLength(value) : 4;
    case Kind.Flag:
      return 1;
    case Kind.Vector: {
      let size = 4;
      // The client walks vectors with forEach, which skips holes: so do both size and write.
      if (Array.isArray(value))
        for (let i = 0; i < value.length; i += 1) if (i in value) size += sizeOf(field.item!, value[i]);
      return size;
    }
    case Kind.Nested:
      return (value as RecordLike).byteLength();
  }
}

/** Writes one field at `offset`; returns where it ended. */
function write(field: Field, value: unknown, buffer: Buffer, offset: number): number {
  switch (field.kind) {
    case Kind.Int:
      return buffer.writeInt32BE(value as number, offset);
    case Kind.Long: {
      // Exactly 8 bytes, zeros after a shorter value: the buffer comes from Node's pool unfilled.
      const copied = (value as Buffer).copy(buffer, offset, 0, 8);
      if (copied < 8) buffer.fill(0, offset + copied, offset + 8);
      return offset + 8;
    }
    case Kind.Bytes:
      if (!Buffer.isBuffer(value)) return buffer.writeInt32BE(-1, offset);
      buffer.writeInt32BE(value.length, offset);
      return offset + 4 + value.copy(buffer, offset + 4);
    case Kind.Text:
      if (typeof value !== 'string') return buffer.writeInt32BE(-1, offset);
      buffer.writeInt32BE(Buffer.byteLength(value), offset);
      return offset + 4 + buffer.write(value, offset + 4, 'utf8');
    case Kind.Flag:
      return buffer.writeUInt8(value ? 1 : 0, offset);
    case Kind.Vector:
      if (!Array.isArray(value)) return buffer.writeInt32BE(-1, offset);
      offset = buffer.writeInt32BE(value.length, offset);
      for (let i = 0; i < value.length; i += 1) if (i in value) offset = write(field.item!, value[i], buffer, offset);
      return offset;
    case Kind.Nested:
      return offset + (value as RecordLike).serialize(buffer, offset);
  }
}

/**
 * A request's bytes: its length, header and payload. Like the client's, but from Node's shared pool
 * instead of an ArrayBuffer per request: every byte of it is written (a long shorter than 8 bytes is
 * padded with zeros, a vector's holes are skipped as the client skips them, and anything short of the
 * end is zeroed), so that no earlier bytes of the process reach the server.
 */
export function encodeRequest(this: { header: RecordLike | null; payload: RecordLike | null }): Buffer {
  const size = (this.header?.byteLength() ?? 0) + (this.payload?.byteLength() ?? 0);
  const buffer = Buffer.allocUnsafe(size + 4);
  let offset = buffer.writeInt32BE(size, 0);
  if (this.header) offset += this.header.serialize(buffer, offset);
  if (this.payload) offset += this.payload.serialize(buffer, offset);
  if (offset < buffer.length) buffer.fill(0, offset);
  return buffer;
}

/**
 * Whether this is a release of the client whose record layer the compiled classes were checked
 * against (1.1.x, whose records all inherit the one Record's methods): another keeps its own classes.
 */
export function compatibleClient(version: unknown): boolean {
  return typeof version === 'string' && /^1\.1\.\d+$/.test(version);
}

/** Whether the installed client is such a release (the direct requests rely on it too). */
export function installedClientCompatible(): boolean {
  return compatibleClient((require('node-zookeeper-client/package.json') as { version?: unknown }).version);
}

/**
 * baton's compiled classes for the installed client's records, made once per process; undefined for a
 * client of another release, or whose record layer is not the client's own any more (wrapped by some
 * other code): baton's client then uses the client's own classes and methods.
 */
export function compiledRecords(): Records | undefined {
  if (compiled === null) compiled = compile();
  return compiled;
}
let compiled: Records | undefined | null = null;

function compile(): Records | undefined {
  const jute = require('node-zookeeper-client/lib/jute/index.js') as Jute;
  const stat = jute.data?.['Stat'];
  if (!installedClientCompatible() || stat === undefined) return undefined;
  const record = Object.getPrototypeOf(stat.prototype).constructor as RecordClass;
  if (!untouched(jute, record)) return undefined;
  const records = { data: {} as Record<string, RecordClass>, protocol: {} as Record<string, RecordClass> };
  const compiler = new Compiler(record, records.data);
  for (const module of ['data', 'protocol'] as const) {
    for (const [name, theirs] of Object.entries(jute[module])) {
      const ours = compiler.compile(theirs);
      if (ours === undefined) return undefined; // not the record layer this was written for
      records[module][name] = ours;
    }
  }
  return records;
}

/**
 * @internal Every record class is the client's kind: a direct heir of the one Record, overriding none of
 * its methods (a class wrapped or replaced by other code is left alone, and with it the whole layer).
 */
export function untouched(jute: Jute, record: RecordClass): boolean {
  const methods = ['byteLength', 'serialize', 'deserialize', 'setChrootPath'];
  const inherited = (Class: RecordClass): boolean =>
    Object.getPrototypeOf(Class.prototype) === record.prototype &&
    methods.every((name) => !Object.prototype.hasOwnProperty.call(Class.prototype, name));
  return (
    typeof jute.Request.prototype.toBuffer === 'function' &&
    [jute.data, jute.protocol].every((module) => Object.values(module).every(inherited))
  );
}
