export type { ForeignKey, Session, SessionState, StateListener } from '../recipes/contract.js';
export type { GuardedClient } from '../recipes/contract.js';
export {
  type ElectionOptions,
  type Leader,
  LeaderElection,
  Leadership,
  type ObserveOptions,
} from '../recipes/election.js';
export {
  AccessDeniedError,
  BackendError,
  BatonError,
  ClosedError,
  HoldLimitError,
  InvalidArgumentError,
  InvalidNameError,
  LockDowngradeError,
  LockLostError,
  LockTimeoutError,
  LockUpgradeError,
  type LossReason,
  NotHeldError,
  PermitsMismatchError,
  SessionLostError,
  StaleTokenError,
  UnknownEntryError,
} from '../recipes/errors.js';
export type {
  LockAborted,
  LockBusy,
  LockEvent,
  LockEventBase,
  LockFailed,
  LockGranted,
  LockHeldTooLong,
  LockKind,
  LockListener,
  LockLost,
  LockReleased,
  LockRequested,
  LockRevoked,
  LockTimedOut,
} from '../recipes/events.js';
export { forceRelease, type ForceReleaseOptions, type RevokedEntry } from '../recipes/force-release.js';
export { type GuardedOptions, GuardedValues, UnsupportedError } from '../recipes/guarded.js';
export { LockHandle } from '../recipes/handle.js';
export type { Interop, LockInterop, LockOptions } from '../recipes/interop.js';
export { MultiLock, MultiLockHandle } from '../recipes/multilock.js';
export { FairMutex, type Lock } from '../recipes/mutex.js';
export {
  ONCE_RECORD,
  type OnceFailurePolicy,
  type OnceOptions,
  type OnceRecord,
  type OnceResult,
  type OnceRun,
  type Period,
  periodOf,
  runOnce,
} from '../recipes/once.js';
export type { Participant, ParticipantsOptions } from '../recipes/participants.js';
export { Reentrant, ReentrantHandle, type ReentrantOptions } from '../recipes/reentrant.js';
export { ReadWriteLock } from '../recipes/rw-lock.js';
export {
  PermitHandle,
  type PermitOptions,
  Semaphore,
  type SemaphoreOptions,
  type TryPermitOptions,
} from '../recipes/semaphore.js';
export type { HoldOptions, RequestOptions, WaitOptions } from '../recipes/validate.js';
export * from './backends/public.js';
export { connect, type ConnectOptions } from './connect.js';
