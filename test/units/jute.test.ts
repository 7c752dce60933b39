import { createRequire } from 'node:module';

import { describe, expect, it } from 'vitest';

import {
  compatibleClient,
  compiledRecords,
  encodeRequest,
  untouched,
} from '../../src/backends/zookeeper/client/jute.js';

// baton compiles a class of its own for each of node-zookeeper-client's record classes
// (src/backends/zookeeper/jute.ts), used by its own client only. Every class must build, size, write and
// read exactly as the client's own: random records of every class, with and without a chroot, through
// both implementations.

type Attribute = { name: string; type: string };
type RecordLike = Record<string, unknown> & {
  specification: Attribute[];
  chrootPath: string | undefined;
  byteLength(): number;
  serialize(buffer: Buffer, offset: number): number;
  deserialize(buffer: Buffer, offset: number): number;
};
type RecordClass = new (...args: unknown[]) => RecordLike;

const jute = createRequire(import.meta.url)('node-zookeeper-client/lib/jute/index.js') as Record<
  'data' | 'protocol',
  Record<string, RecordClass>
> & {
  Request: new (header: RecordLike | null, payload: RecordLike | null) => { toBuffer(): Buffer };
};

/** A small deterministic generator, so that a failure can be replayed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

function valueOf(type: string, next: () => number): unknown {
  const pick = <T>(options: T[]): T => options[Math.floor(next() * options.length)]!;
  switch (type) {
    case 'int':
      return pick([0, 1, -1, 2 ** 31 - 1, -(2 ** 31), Math.floor(next() * 2 ** 32) - 2 ** 31]);
    case 'long':
      return pick([undefined, Buffer.from(Array.from({ length: 8 }, () => Math.floor(next() * 256)))]);
    case 'buffer':
      return pick([
        undefined,
        Buffer.alloc(0),
        Buffer.from(Array.from({ length: Math.floor(next() * 40) }, () => Math.floor(next() * 256))),
      ]);
    case 'ustring':
      return pick([
        undefined,
        '',
        '/',
        '/a/b',
        '/baton/q/_c_x-lock-0000000001',
        'zé€𝄞',
        'x'.repeat(Math.floor(next() * 300)),
      ]);
    case 'boolean':
      return pick([undefined, true, false]);
  }
  const vector = /^vector<(.+)>$/.exec(type);
  if (vector !== null)
    return next() < 0.2 ? undefined : Array.from({ length: Math.floor(next() * 4) }, () => item(vector[1]!, next));
  const nested = /^data\.(\w+)$/.exec(type);
  if (nested !== null) return next() < 0.3 ? undefined : build(jute.data[nested[1]!]!, next);
  throw new Error(`no values for ${type}`);
}

/** A vector's item: never missing (the client writes none). */
function item(type: string, next: () => number): unknown {
  const nested = /^data\.(\w+)$/.exec(type);
  return nested !== null ? build(jute.data[nested[1]!]!, next) : (valueOf(type, next) ?? '');
}

function build(Class: RecordClass, next: () => number): RecordLike {
  return new Class(...new Class().specification.map((attribute) => valueOf(attribute.type, next)));
}

/** What a call did: its value, or the error it threw. */
function outcome<T>(run: () => T): { value: T } | { error: string } {
  try {
    return { value: run() };
  } catch (error) {
    return { error: String(error) };
  }
}

const ours = compiledRecords() as unknown as Record<'data' | 'protocol', Record<string, RecordClass>>;
const classes = (['data', 'protocol'] as const).flatMap((module) =>
  Object.keys(ours[module]).map((name) => [module, name] as const),
);
const theirToBuffer = jute.Request.prototype.toBuffer;

describe('compiled jute records', () => {
  it('compiles the records only for the releases it was checked against', () => {
    const installed = createRequire(import.meta.url)('node-zookeeper-client/package.json') as { version: string };
    expect(compatibleClient(installed.version)).toBe(true);
    for (const version of ['1.1.0', '1.1.3', '1.1.12']) expect(compatibleClient(version)).toBe(true);
    for (const version of ['1.2.0', '2.0.0', '1.10.1', '0.2.2', '1.1.3-beta', '', undefined, 113])
      expect(compatibleClient(version)).toBe(false);
  });

  it('leaves the record layer alone where other code changed a record class', () => {
    const Record = Object.getPrototypeOf(jute.data['Stat']!.prototype).constructor as RecordClass;
    const layer = (extra: Record<string, RecordClass>) => ({
      Request: jute.Request,
      data: { ...jute.data },
      protocol: { ...jute.protocol, ...extra },
    });
    expect(untouched(layer({}) as never, Record)).toBe(true);
    const Wrapped = function Wrapped() {} as unknown as RecordClass;
    Wrapped.prototype = Object.create(Record.prototype, { serialize: { value: () => 0 } }) as RecordLike;
    expect(untouched(layer({ Wrapped }) as never, Record)).toBe(false);
    const Stranger = function Stranger() {} as unknown as RecordClass;
    expect(untouched(layer({ Stranger }) as never, Record)).toBe(false);
  });

  it("compiled every record class of the client, and left the client's own as they were", () => {
    expect(classes.length).toBe(Object.keys(jute.data).length + Object.keys(jute.protocol).length);
    expect(classes.length).toBeGreaterThan(20);
    const Record = Object.getPrototypeOf(jute.data['Stat']!.prototype).constructor as RecordClass;
    for (const [module, name] of classes) {
      expect(ours[module][name]).not.toBe(jute[module][name]);
      expect(new ours[module][name]!()).toBeInstanceOf(jute[module][name]!);
      expect(Object.getPrototypeOf(jute[module][name]!.prototype)).toBe(Record.prototype);
    }
    expect(untouched(jute as never, Record)).toBe(true);
  });

  it.each(classes)('%s.%s builds, sizes, writes and reads as the client does', (module, name) => {
    const Original = jute[module][name]!;
    const Compiled = ours[module][name]!;
    const next = random(name.length * 7919 + module.length);
    for (let trial = 0; trial < 150; trial += 1) {
      const args = new Original().specification.map((attribute) => valueOf(attribute.type, next));
      const [theirs, ours] = [new Original(...args), new Compiled(...args)];
      expect(ours).toEqual(theirs);
      expect(Object.keys(ours)).toEqual(Object.keys(theirs));
      const chroot = trial % 3 === 0 ? '/chroot' : undefined;
      theirs.chrootPath = ours.chrootPath = chroot;
      expect(ours.byteLength()).toBe(theirs.byteLength());
      const size = theirs.byteLength();
      const offset = trial % 5;
      const [written, wrote] = [Buffer.alloc(size + offset + (trial % 2)), Buffer.alloc(size + offset + (trial % 2))];
      expect(outcome(() => ours.serialize(wrote, offset))).toEqual(outcome(() => theirs.serialize(written, offset)));
      expect(wrote.equals(written)).toBe(true);
      // Read back, whole and cut short, into fresh records of each kind with the same chroot.
      for (const end of [written.length, offset + Math.floor(size / 2)]) {
        const bytes = written.subarray(0, end);
        const [read, readOurs] = [new Original(), new Compiled()];
        read.chrootPath = readOurs.chrootPath = chroot;
        expect(outcome(() => readOurs.deserialize(bytes, offset))).toEqual(
          outcome(() => read.deserialize(bytes, offset)),
        );
        expect(readOurs).toEqual(read);
      }
    }
  });

  it('encodes requests as the client does: length, header, payload', () => {
    const next = random(42);
    for (const name of ['GetChildren2Request', 'CreateRequest', 'DeleteRequest', 'SetWatches', 'ConnectRequest']) {
      for (let trial = 0; trial < 50; trial += 1) {
        const header = trial % 4 === 0 ? null : build(ours.protocol['RequestHeader']!, next);
        const request = new jute.Request(header, build(ours.protocol[name]!, next));
        expect(encodeRequest.call(request as never)).toEqual(theirToBuffer.call(request));
      }
    }
  });

  it("refuses misuse with the client's errors", () => {
    const [theirs, mine] = [
      new jute.protocol['GetDataRequest']!('/a', true),
      new ours.protocol['GetDataRequest']!('/a', true),
    ];
    for (const [buffer, offset] of [
      [Buffer.alloc(4), 0],
      [Buffer.alloc(20), 20],
      [Buffer.alloc(20), -1],
      ['not a buffer', 0],
    ] as const) {
      expect(outcome(() => mine.serialize(buffer as Buffer, offset))).toEqual(
        outcome(() => theirs.serialize(buffer as Buffer, offset)),
      );
      expect(outcome(() => mine.deserialize(buffer as Buffer, offset))).toEqual(
        outcome(() => theirs.deserialize(buffer as Buffer, offset)),
      );
    }
  });

  it('reads 64-bit fields into buffers of their own, not views of the reply', () => {
    const stat = build(jute.data['Stat']!, random(1));
    const bytes = Buffer.alloc(stat.byteLength());
    stat.serialize(bytes, 0);
    const read = new ours.data['Stat']!();
    read.deserialize(bytes, 0);
    bytes.fill(0);
    expect(read['czxid']).toEqual(stat['czxid']);
    // Each in an 8-byte memory of its own, as the client's: a slice of a shared pool would show other
    // bytes through `.buffer` and keep the whole pool alive.
    for (const field of ['czxid', 'mzxid', 'ctime', 'mtime', 'pzxid', 'ephemeralOwner']) {
      const long = read[field] as Buffer;
      expect([long.byteOffset, long.buffer.byteLength]).toEqual([0, 8]);
    }
  });

  it('writes odd values as the client does: longs not 8 bytes long, vectors with holes, from unfilled memory', () => {
    const header = new ours.protocol['RequestHeader']!(7, 101);
    for (let trial = 0; trial < 40; trial += 1) {
      // Leave earlier bytes in Node's pool, which the request's buffer may come from.
      Buffer.allocUnsafe(64).fill(0xab);
      const zxid = Buffer.alloc(trial % 12, 0x5c);
      const paths = ['/a', '/bb'];
      if (trial % 2 === 1) delete paths[0];
      const payload = new ours.protocol['SetWatches']!(zxid, paths, [], ['/c']);
      payload['relativeZxid'] = zxid; // the constructor copies into 8 bytes; a caller may set any buffer
      const request = new jute.Request(header, payload);
      expect(encodeRequest.call(request as never)).toEqual(theirToBuffer.call(request));
    }
  });
});
