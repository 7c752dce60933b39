export { connect, type ConnectOptions } from './connect.js';
export { BatonSession as Session } from './session.js';
export type { SessionState, Entry } from '../recipes/contract.js';
export type {
  LockEvent,
  LockListener,
  LockKind,
  LockRequested,
  LockGranted,
  LockBusy,
  LockTimedOut,
  LockAborted,
  LockFailed,
  LockReleased,
  LockLost,
} from '../recipes/events.js';
export { FairMutex, type Lock } from '../recipes/mutex.js';
export { ReadWriteLock } from '../recipes/rw-lock.js';
export { Reentrant, ReentrantHandle, type ReentrantOptions } from '../recipes/reentrant.js';
export { LockHandle } from '../recipes/handle.js';
export { LeaderElection, Leadership, type ElectionOptions } from '../recipes/election.js';
export type { WaitOptions } from '../recipes/validate.js';
export {
  BatonError,
  BackendError,
  ClosedError,
  InvalidArgumentError,
  InvalidNameError,
  LockLostError,
  LockTimeoutError,
  LockUpgradeError,
  NotHeldError,
  SessionLostError,
} from '../recipes/errors.js';
export { expireMemorySession } from './backends/memory/expire.js';
