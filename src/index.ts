export { connect, type ConnectOptions, type EtcdClientOptions, type RedisClientOptions, type ZkAuth } from './connect.js';
export type { AclPolicy } from './backends/zookeeper/acl.js';
export type { Session, SessionState, StateListener, ForeignKey } from '../recipes/contract.js';
export type {
  LockEvent,
  LockEventBase,
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
export { Semaphore, PermitHandle, type SemaphoreOptions, type PermitOptions, type TryPermitOptions } from '../recipes/semaphore.js';
export { MultiLock, MultiLockHandle } from '../recipes/multilock.js';
export { LeaderElection, Leadership, type ElectionOptions, type Leader, type ObserveOptions } from '../recipes/election.js';
export type { WaitOptions } from '../recipes/validate.js';
export type { Interop, LockInterop, LockOptions } from '../recipes/interop.js';
export {
  BatonError,
  AccessDeniedError,
  BackendError,
  ClosedError,
  InvalidArgumentError,
  InvalidNameError,
  LockLostError,
  LockDowngradeError,
  LockTimeoutError,
  LockUpgradeError,
  NotHeldError,
  PermitsMismatchError,
  SessionLostError,
} from '../recipes/errors.js';
