import type { Session } from '../../../recipes/contract.js';
import type { ConnectOptions } from '../../../src/connect.js';

/** What a contract suite needs to know about the backend it runs on. */
export interface Fixture {
  readonly name: string;
  url(namespace: string): string;
  readonly options: ConnectOptions;
  /** Keys of live queue entries under the namespace (directories do not count). */
  entries(namespace: string): Promise<string[]>;
  /** Keys that still have a deletion watch registered under the namespace. */
  watched(namespace: string): Promise<string[]>;
  /** Deletion notifications received by this process so far (all sessions). */
  notifications(): number;
  /** Ends a session from the server side (ZooKeeper: close it from a second connection). */
  expire(session: Session): Promise<void>;
  /** Which of these sessions the server still keeps (after close(), none may remain). */
  liveSessions(ids: readonly string[]): Promise<string[]>;
  /** Deletes one queue entry as another client or an operator would. */
  removeEntry(key: string): Promise<void>;
  /** Removes whatever directories the namespace still has on the server. */
  cleanup(namespace: string): Promise<void>;
  /** Whether one session's read may not yet show another session's write (a ZooKeeper ensemble). */
  readonly laggingReads?: boolean;
  /** Whether separate processes can share this backend (memory:// lives in one process). */
  readonly crossProcess: boolean;
  /** Milliseconds by which the backend is sure to have noticed an expiry or a lost connection. */
  readonly lossDeadlineMs: number;
}
