/**
 * One abort listener on a caller's signal however many waits listen to it. Node's EventTarget walks a
 * signal's listeners at every add and remove (to drop duplicates), so 10,000 acquires given one signal
 * (a batch's AbortController) cost 10,000² steps; here each wait's add and remove is a Set's, and the
 * signal's own listener goes with the last wait, as if each had removed its own.
 */
const fanouts = new WeakMap<AbortSignal, Fanout>();

interface Fanout {
  readonly listeners: Set<() => void>;
  readonly onAbort: () => void;
}

/** Calls `listener` once when `signal` (not aborted yet) aborts, until the returned function removes it. */
export function listenForAbort(signal: AbortSignal, listener: () => void): () => void {
  let fanout = fanouts.get(signal);
  if (fanout === undefined) {
    const listeners = new Set<() => void>();
    const onAbort = (): void => {
      fanouts.delete(signal);
      // Like an AbortSignal: a listener that an earlier one removes during the abort is not called,
      // and one that throws is reported apart, without skipping the others.
      for (const each of [...listeners]) {
        if (!listeners.delete(each)) continue;
        try {
          each();
        } catch (error) {
          process.nextTick(() => {
            throw error;
          });
        }
      }
    };
    fanout = { listeners, onAbort };
    fanouts.set(signal, fanout);
    signal.addEventListener('abort', onAbort, { once: true });
  }
  const { listeners } = fanout;
  const own = fanout;
  // A function of its own per call: the same listener added twice is kept twice, removed apart.
  const entry = (): void => listener();
  listeners.add(entry);
  return () => {
    if (!listeners.delete(entry) || listeners.size > 0 || fanouts.get(signal) !== own) return;
    fanouts.delete(signal);
    signal.removeEventListener('abort', own.onAbort);
  };
}
