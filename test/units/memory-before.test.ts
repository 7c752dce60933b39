import { describe, expect, it } from 'vitest';

import { MemoryStore } from '../../src/backends/memory/store.js';

describe('memory: the entries just ahead of one (listBefore)', () => {
  const store = (): { store: MemoryStore; keys: string[] } => {
    const memory = new MemoryStore();
    const keys = ['a', 'b', 'c', 'd'].map((owner) => memory.add('ns/q', 'q', 'lock', owner).key);
    return { store: memory, keys };
  };

  it('gives the entries ordered before self, nearest first, at most limit, and whether more are ahead', () => {
    const { store: memory, keys } = store();
    const self = memory.get(keys[3]!)!;
    expect(memory.before('ns/q', self, 2)).toMatchObject({
      present: true,
      entries: [{ key: keys[2] }, { key: keys[1] }],
      more: true,
    });
    const all = memory.before('ns/q', self, undefined);
    expect(all.entries.map((e) => e.key)).toEqual([keys[2], keys[1], keys[0]]);
    expect(all.more).toBe(false);
    expect(memory.before('ns/q', memory.get(keys[0]!)!, 1)).toEqual({ present: true, entries: [], more: false });
  });

  it('sees an entry placed at an earlier entry after self was added, and says when self is gone', () => {
    const { store: memory, keys } = store();
    const self = memory.get(keys[3]!)!;
    const moved = memory.add('ns/q', 'q', 'read', 'a', memory.get(keys[0]!));
    memory.remove(keys[0]!);
    memory.remove(keys[1]!);
    memory.remove(keys[2]!);
    expect(memory.before('ns/q', self, 1).entries.map((e) => e.key)).toEqual([moved.key]);
    memory.remove(self.key);
    expect(memory.before('ns/q', self, 1).present).toBe(false);
  });
});
