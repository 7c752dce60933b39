import type { SettleOutcome } from './ledger.js';

/** What a demo worker is told to do, and what it tells back: the same in-process and over IPC. */
export type Command =
  | { readonly type: 'tick'; readonly period: number }
  | { readonly type: 'read'; readonly holdMs: number }
  | { readonly type: 'write'; readonly holdMs: number }
  | { readonly type: 'close' };

export type EventType =
  | 'granted'
  | 'computing'
  | 'skipped'
  | 'settled'
  | 'refused'
  | 'lost'
  | 'releasing'
  | 'reconnected'
  | 'read'
  | 'wrote'
  | 'failed';

export interface WorkerEvent {
  readonly worker: string;
  /** Date.now() in the worker when it happened: events of different processes arrive over different pipes. */
  readonly at?: number;
  readonly type: EventType;
  readonly what?: string;
  readonly period?: number;
  readonly token?: string;
  readonly waitedMs?: number;
  readonly version?: number;
  readonly detail?: string;
}

/** The parent's side of the demo, as a worker reaches it: the ledger, the configuration, the timeline. */
export interface Parent {
  isSettled(period: number): Promise<boolean>;
  settle(period: number, worker: string, token: string): Promise<SettleOutcome>;
  readConfig(): Promise<number>;
  writeConfig(version: number, token: string): Promise<boolean>;
  /** Resolves when a job's computing may end: at once, or when a pause the parent imposed ends. */
  pause(worker: string, period: number): Promise<void>;
  report(event: WorkerEvent): void;
}

export const SETTLEMENT = 'payments/settlement';
export const CONFIG = 'config/pricing';
/** How long the settlement job computes before it writes, and the time any single wait may take. */
export const JOB_MS = 150;
