import type { Hold, SessionCore } from './contract.js';
import { HoldLimitError } from './errors.js';

/**
 * The session's view for the handle of a grant limited to `maxHoldMs` (the same view when there is no
 * limit): its registration of the hold also starts a timer that, when it fires, aborts the holder's
 * signal with `HoldLimitError` and withdraws the entry. The timer ends with the hold (a release or any
 * other loss), so a hold that ends in time leaves nothing behind.
 */
export function limitHold(core: SessionCore, maxHoldMs: number | undefined, what: string): SessionCore {
  if (maxHoldMs === undefined) return core;
  // Everything else is the session's own view, reached through the prototype (its getters read the session).
  const limited = Object.create(core) as { -readonly [K in keyof SessionCore]: SessionCore[K] };
  limited.hold = (hold) => holdWithin(core, hold, maxHoldMs, what);
  return limited;
}

function holdWithin(core: SessionCore, hold: Hold, maxHoldMs: number, what: string): () => void {
  let timer: NodeJS.Timeout | undefined;
  let ended = false;
  const end = (): void => {
    ended = true;
    clearTimeout(timer);
  };
  const unhold = core.hold({
    entry: hold.entry,
    lose: (reason) => {
      end();
      hold.lose(reason);
    },
    release: () => hold.release(),
    get releasing() {
      return hold.releasing;
    },
  });
  // Lost inside `hold()` already (granted past the session's deadline): nothing to time.
  if (!ended) {
    timer = setTimeout(() => {
      end();
      hold.lose(new HoldLimitError(what, maxHoldMs));
      // Withdrawn whatever the holder does; its own release later returns this same promise.
      hold.release().catch(() => undefined);
    }, maxHoldMs);
    // A limit does not keep a process alive that has nothing else to do.
    timer.unref();
  }
  return () => {
    end();
    unhold();
  };
}
