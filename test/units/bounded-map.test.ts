import { describe, expect, it } from 'vitest';

import { BoundedMap } from '../../recipes/bounded-map.js';

describe('BoundedMap', () => {
  it('keeps at most its limit, forgetting the oldest first and telling of each key forgotten', () => {
    const evicted: string[] = [];
    const map = new BoundedMap<string, number>(2, (key) => evicted.push(key));
    map.set('a', 1);
    map.set('b', 2);
    map.set('a', 10); // an existing key: no room needed
    map.set('c', 3);
    expect([...map.keys()]).toEqual(['b', 'c']);
    expect(evicted).toEqual(['a']);
    map.delete('b'); // a delete is not an eviction
    expect(evicted).toEqual(['a']);
  });

  it('touch makes a key the most recent, so the least recently used goes first', () => {
    const map = new BoundedMap<string, number>(2);
    map.set('a', 1);
    map.set('b', 2);
    expect(map.touch('a')).toBe(1);
    map.set('c', 3);
    expect([...map.keys()]).toEqual(['a', 'c']);
    expect(map.touch('missing')).toBeUndefined();
  });

  it('getOrSet makes a value once', () => {
    const map = new BoundedMap<string, number>(4);
    let made = 0;
    expect(map.getOrSet('k', () => (made += 1))).toBe(1);
    expect(map.getOrSet('k', () => (made += 1))).toBe(1);
    expect(made).toBe(1);
  });
});
