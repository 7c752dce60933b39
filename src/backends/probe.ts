/**
 * The port through which `baton-locks/testing` reaches into a driver: counters, fault hooks, and a view
 * of the driver's state. The test build hands each driver it opens the probe its backend's test kit
 * makes (the descriptor's `testing`, see `connectWith` in connect.ts); the package's own `connect`
 * hands none, so a production session has no test power and shares no state with any other.
 */

/** A probe for one driver: what it counts into, what it obeys, and where it shows its view. */
export interface Probe<Counters, View> {
  /** Counted into by the driver; the test build shares one object among all its sessions. */
  readonly counters: Counters;
  /** Receives the driver's view once it is open. */
  expose(view: View): void;
}

/**
 * A probe's count of what is watched: `tag` watched once more (+1) or once less (-1), kept only while
 * some session watches it, so that a test's clean-state check finds the map empty.
 */
export function countWatch(watches: Map<string, number>, tag: string, delta: 1 | -1): void {
  const count = (watches.get(tag) ?? 0) + delta;
  if (count > 0) watches.set(tag, count);
  else watches.delete(tag);
}
