/**
 * A demo worker in a process of its own (`--backend zk://...` or `etcd://...`): its own session,
 * commands from the parent over IPC, and the parent's ledger reached by request and reply.
 */
import { connect, type ConnectOptions } from '../connect.js';
import type { Command, Parent, WorkerEvent } from './protocol.js';
import { DemoWorker } from './worker.js';

export type ToChild = { kind: 'command'; id: number; command: Command } | { kind: 'reply'; id: number; value: unknown };
export type FromChild =
  | { kind: 'event'; event: WorkerEvent }
  | { kind: 'call'; id: number; method: Exclude<keyof Parent, 'report'>; args: unknown[] }
  | { kind: 'done'; id: number };

const [name = 'worker', url = '', optionsJson = '{}', waitMs = '30000'] = process.argv.slice(2);
const send = (message: FromChild): void => void process.send?.(message);
const replies = new Map<number, (value: unknown) => void>();
let nextCall = 0;
const call = (method: Exclude<keyof Parent, 'report'>, ...args: unknown[]): Promise<never> =>
  new Promise((resolve) => {
    const id = nextCall++;
    replies.set(id, resolve as (value: unknown) => void);
    send({ kind: 'call', id, method, args });
  });

const parent: Parent = {
  isSettled: (period) => call('isSettled', period),
  settle: (period, worker, token) => call('settle', period, worker, token),
  readConfig: () => call('readConfig'),
  writeConfig: (version, token) => call('writeConfig', version, token),
  pause: (worker, period) => call('pause', worker, period),
  report: (event) => send({ kind: 'event', event }),
};
const worker = new DemoWorker(
  name,
  () => connect(url, JSON.parse(optionsJson) as ConnectOptions),
  parent,
  Number(waitMs),
);

let closing = false;
// The parent is gone (killed, crashed): end at once, which ends the session and frees its locks.
process.on('disconnect', () => {
  if (!closing) process.exit(1);
});

process.on('message', (message: ToChild) => {
  if (message.kind === 'reply') {
    replies.get(message.id)?.(message.value);
    replies.delete(message.id);
    return;
  }
  if (message.command.type === 'close') closing = true;
  void worker.run(message.command).then(() => {
    send({ kind: 'done', id: message.id });
    if (message.command.type === 'close') process.disconnect();
  });
});
await worker.session(); // connected before the parent starts the first tick
send({ kind: 'event', event: { worker: name, type: 'reconnected', detail: 'ready' } });
