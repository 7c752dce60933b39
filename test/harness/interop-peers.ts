import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import { CURATOR_JARS, etcdctlBinary, KAZOO_PYTHON, type PeerTools, peerTools } from './servers/install.js';

/**
 * Peers that lock with the real client libraries of other ecosystems, for interop tests: Apache
 * Curator's recipes (test/interop/peers/CuratorPeer.java), kazoo's (test/interop/peers/kazoo_peer.py)
 * and etcdctl's `lock` and `elect`. Each peer is a process of its own, tracked here and killed by its
 * PID if a test leaves it running (`stopAllPeers`, and on exit). Every wait is bounded; a failure
 * names the peer, what it printed and the tail of its stderr.
 *
 * The Curator and kazoo peers speak one protocol. stdin, one command a line: `acquire`, `release`,
 * `leader`, `exit` (EOF: exit). stdout, one event a line: `ready` once connected, `granted` when it
 * holds the lock or leads, `released` once its node is gone after `release` (a `release` while waiting
 * cancels the acquire and deletes the node; while idle it answers at once), `leader ID` in answer to
 * `leader` (nothing after the space when nobody leads), `error MESSAGE`, and for information
 * `state STATE` on each change of the connection's state. After `release` the next event is `released`,
 * never a late `granted`.
 */
export interface Peer {
  readonly name: string;
  /** The PID of the peer's process, if one runs (an etcdctl peer runs one only between acquire and release). */
  readonly pid: number | undefined;
  /** Every line the peer printed on stdout, for diagnosis. */
  readonly lines: readonly string[];
  /** Starts acquiring (campaigning); returns at once. */
  acquire(): void;
  /** Resolves once the acquire started last has been granted; rejects on timeout, an error, or exit. */
  granted(timeoutMs?: number): Promise<void>;
  /** Holds the lock (leads) now, as far as its output has told. */
  isGranted(): boolean;
  /** When (`performance.now()`) this process read the grant of the acquire started last; undefined before. */
  readonly grantedAt: number | undefined;
  /** Gives up the lock, or cancels a pending acquire; resolves once the peer's node or key is gone. */
  release(timeoutMs?: number): Promise<void>;
  /**
   * The leader (holder) as this peer's library reads it, or null when there is none. Curator: latch
   * and selector ask their recipe (getLeader()); the others take the data of the child with the lowest
   * sequence number, as those recipes do. kazoo: the first of Lock(path).contenders() (of
   * WriteLock(path)'s, which count readers too, for read and write). etcdctl: the value (proposal) of
   * the oldest key under NAME/ for elect, its key for lock, as etcd's Election.Leader reads it.
   */
  leader(timeoutMs?: number): Promise<string | null>;
  /** Exits (releasing what it holds) and waits; killed by its PID after a bound. Never rejects. */
  stop(): Promise<void>;
}

export interface EtcdctlPeer extends Peer {
  /** The key etcdctl printed when granted (`NAME/LEASE_HEX`), until released. */
  readonly key: string | undefined;
}

export type CuratorRecipe = 'mutex' | 'read' | 'write' | 'selector' | 'latch' | 'observe';
export type KazooRecipe = 'mutex' | 'read' | 'write' | 'election' | 'observe';
export type EtcdctlRecipe = 'lock' | 'elect';

const READY_TIMEOUT_MS = 30_000;
const DEFAULT_TIMEOUT_MS = 10_000;
/** How long a peer gets to exit (it releases and closes its session first) before it is killed. */
const EXIT_GRACE_MS = 10_000;
const STDERR_TAIL_CHARS = 4_000;
const PEERS_DIR = fileURLToPath(new URL('../interop/peers', import.meta.url));
const JVM = [
  '-Xmx64m',
  '-XX:+UseSerialGC',
  '-XX:TieredStopAtLevel=1',
  '-Xshare:auto',
  '-Djava.net.preferIPv4Stack=true',
  '-Dzookeeper.sasl.client=false',
  '-Dorg.slf4j.simpleLogger.defaultLogLevel=warn',
];

export { CURATOR_JARS, KAZOO_PYTHON, type PeerTools };

/** Curator's classpath (see CURATOR_JARS), with `dir` (the compiled peer) after it if given. */
export function curatorClasspath(dir?: string): string {
  return [...CURATOR_JARS, ...(dir === undefined ? [] : [dir])].join(':');
}

let tools: PeerTools | undefined;

/** Which peers can run here (checked once per process). */
export function peersAvailable(): PeerTools {
  tools ??= peerTools();
  return tools;
}

const PACKAGES: Record<keyof PeerTools, string> = {
  curator: 'libcurator-recipes-java libcurator-framework-java libcurator-client-java (and a JDK for javac)',
  kazoo: 'python3-kazoo (for /usr/bin/python3)',
  etcdctl: 'etcd-client',
};

/** Throws, saying what to install, unless the given peers can run here. */
export function requirePeers(...kinds: (keyof PeerTools)[]): void {
  const available = peersAvailable();
  const missing = kinds.filter((kind) => !available[kind]);
  if (missing.length > 0) {
    throw new Error(
      `interop peers missing: ${missing.join(', ')}; install with: sudo apt-get install -y ${missing.map((k) => PACKAGES[k]).join(' ')}`,
    );
  }
}

// ---- processes ----

/** Every peer process running: stopped by `stopAllPeers`, killed by PID when this process ends. */
const running = new Set<LineProcess>();
/** Temp dirs of this process (the compiled Curator peer), removed when it ends. */
const tempDirs = new Set<string>();
let hooked = false;

/**
 * Kills the peers still running by PID and removes the temp dirs on exit, and on SIGINT and SIGTERM
 * (vitest ends its fork workers with SIGTERM, on which no 'exit' event comes). The signal is then
 * raised again for its default action, unless someone else listens for it (the server harness, which
 * does the same).
 */
function hookExit(): void {
  if (hooked) return;
  hooked = true;
  const cleanUp = (): void => {
    for (const proc of running) proc.kill('SIGKILL');
    running.clear();
    for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
    tempDirs.clear();
  };
  process.on('exit', cleanUp);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      cleanUp();
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    });
  }
}

/** Stops every peer still running (for `afterEach`): each exits, or is killed by its PID after a bound. */
export async function stopAllPeers(): Promise<void> {
  await Promise.all([...running].map((proc) => proc.stop()));
}

interface Waiter {
  readonly match: (line: string) => boolean;
  readonly fail: (line: string) => boolean;
  readonly settle: (error: Error | undefined, line?: string) => void;
}

/** A child process whose stdout is read line by line; waits on its lines are bounded. */
class LineProcess {
  readonly lines: string[] = [];
  private stderr = '';
  private readonly waiters = new Set<Waiter & { from: number }>();
  readonly child: ChildProcess;
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  readonly exited: Promise<void>;

  constructor(
    readonly label: string,
    command: string,
    args: readonly string[],
    private readonly onLine: (line: string) => void,
    /** With `stdin`, `exit` on stdin asks it to exit; else `stopSignal` does (SIGTERM by default). */
    private readonly options: { stdin: boolean; stopSignal?: NodeJS.Signals },
  ) {
    hookExit();
    this.child = spawn(command, args, { stdio: [options.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
    running.add(this);
    this.exited = new Promise((resolve) => {
      this.child.once('close', (code, signal) => {
        this.exit = { code, signal };
        running.delete(this);
        for (const waiter of this.waiters) waiter.settle(this.failure(`exited with ${code ?? signal}`));
        this.waiters.clear();
        resolve();
      });
    });
    // Spawning failed (a missing binary): reported as an exit.
    this.child.once('error', (error) => {
      this.stderr += `\n${error.message}`;
    });
    this.child.stdin?.on('error', () => undefined); // a peer that exited meanwhile
    this.child.stderr!.setEncoding('utf8');
    this.child.stderr!.on('data', (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-STDERR_TAIL_CHARS);
    });
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      this.lines.push(line);
      this.onLine(line);
      for (const waiter of [...this.waiters]) {
        if (waiter.match(line)) waiter.settle(undefined, line);
        else if (waiter.fail(line)) waiter.settle(this.failure(line));
      }
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get alive(): boolean {
    return this.exit === undefined;
  }

  failure(what: string): Error {
    const stderr = this.stderr.trim() === '' ? '(nothing)' : this.stderr.trimEnd().split('\n').slice(-15).join('\n');
    return new Error(`${this.label}: ${what}\nstdout: ${this.lines.slice(-15).join(' | ')}\nstderr tail:\n${stderr}`);
  }

  send(command: string): void {
    if (!this.alive || this.child.stdin === null || this.child.stdin.destroyed)
      throw this.failure(`cannot send "${command}": not running`);
    this.child.stdin.write(`${command}\n`);
  }

  /**
   * The first line from index `from` on that `match`es; rejects on a line that `fail`s first, on exit,
   * or after `timeoutMs`.
   */
  waitLine(
    what: string,
    from: number,
    timeoutMs: number,
    match: (line: string) => boolean,
    fail: (line: string) => boolean = () => false,
  ): Promise<string> {
    for (const line of this.lines.slice(from)) {
      if (match(line)) return Promise.resolve(line);
      if (fail(line)) return Promise.reject(this.failure(line));
    }
    if (!this.alive)
      return Promise.reject(this.failure(`exited with ${this.exit?.code ?? this.exit?.signal} before ${what}`));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(this.failure(`no ${what} after ${timeoutMs} ms`));
      }, timeoutMs);
      const waiter = {
        from,
        match,
        fail,
        settle: (error: Error | undefined, line?: string) => {
          clearTimeout(timer);
          this.waiters.delete(waiter);
          if (error !== undefined) reject(error);
          else resolve(line!);
        },
      };
      this.waiters.add(waiter);
    });
  }

  kill(signal: NodeJS.Signals): void {
    if (!this.alive || this.child.pid === undefined) return;
    try {
      process.kill(this.child.pid, signal);
    } catch {
      // already gone
    }
  }

  /** Settles once it has exited, or after `timeoutMs`; true if it exited. */
  async waitExit(timeoutMs: number): Promise<boolean> {
    if (!this.alive) return true;
    let timer: NodeJS.Timeout | undefined;
    const exited = await Promise.race([
      this.exited.then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
    ]);
    clearTimeout(timer);
    return exited;
  }

  /** Asks it to exit (`exit` on stdin, or its stop signal), kills it by PID after a bound, waits until it is gone. */
  async stop(): Promise<void> {
    if (!this.alive) return;
    if (this.options.stdin && this.child.stdin && !this.child.stdin.destroyed) this.child.stdin.end('exit\n');
    else this.kill(this.options.stopSignal ?? 'SIGTERM');
    if (await this.waitExit(EXIT_GRACE_MS)) return;
    this.kill('SIGKILL');
    await this.waitExit(5_000);
  }
}

// ---- Curator and kazoo ----

let nextId = 0;

function defaultId(kind: string): string {
  nextId += 1;
  return `${kind}-${process.pid}-${nextId}`;
}

/** A Curator or kazoo peer: a long-running process that speaks the line protocol above. */
class ProtocolPeer implements Peer {
  private held = false;
  grantedAt: number | undefined;
  /** Index in `lines` from which the answer to the last `acquire` is read. */
  private acquiredFrom: number | undefined;
  private leaderQueue: Promise<unknown> = Promise.resolve();

  constructor(
    readonly name: string,
    private readonly proc: LineProcess,
  ) {}

  static async start(name: string, command: string, args: readonly string[]): Promise<ProtocolPeer> {
    let peer: ProtocolPeer | undefined;
    const proc = new LineProcess(name, command, args, (line) => peer?.onLine(line), { stdin: true });
    peer = new ProtocolPeer(name, proc);
    try {
      await proc.waitLine(
        'ready',
        0,
        READY_TIMEOUT_MS,
        (line) => line === 'ready',
        (line) => line.startsWith('error '),
      );
    } catch (error) {
      await proc.stop();
      throw error;
    }
    return peer;
  }

  get pid(): number | undefined {
    return this.proc.alive ? this.proc.pid : undefined;
  }

  get lines(): readonly string[] {
    return this.proc.lines;
  }

  private onLine(line: string): void {
    if (line === 'granted') {
      this.held = true;
      this.grantedAt ??= performance.now();
    } else if (line === 'released') this.held = false;
  }

  acquire(): void {
    this.grantedAt = undefined;
    this.acquiredFrom = this.proc.lines.length;
    this.proc.send('acquire');
  }

  async granted(timeoutMs = DEFAULT_TIMEOUT_MS): Promise<void> {
    if (this.acquiredFrom === undefined) throw this.proc.failure('granted() without acquire()');
    await this.proc.waitLine(
      'granted',
      this.acquiredFrom,
      timeoutMs,
      (line) => line === 'granted',
      (line) => line.startsWith('error ') || line === 'released',
    );
  }

  isGranted(): boolean {
    return this.held && this.proc.alive;
  }

  async release(timeoutMs = DEFAULT_TIMEOUT_MS): Promise<void> {
    const from = this.proc.lines.length;
    this.acquiredFrom = undefined;
    this.proc.send('release');
    await this.proc.waitLine(
      'released',
      from,
      timeoutMs,
      (line) => line === 'released',
      (line) => line.startsWith('error '),
    );
  }

  leader(timeoutMs = DEFAULT_TIMEOUT_MS): Promise<string | null> {
    // One question at a time, so that each answer is read after its own question.
    const asked = this.leaderQueue.then(async () => {
      const from = this.proc.lines.length;
      this.proc.send('leader');
      const line = await this.proc.waitLine(
        'leader answer',
        from,
        timeoutMs,
        (l) => l === 'leader' || l.startsWith('leader '),
        (l) => l.startsWith('error leader'),
      );
      const id = line.slice('leader '.length);
      return id === '' ? null : id;
    });
    this.leaderQueue = asked.catch(() => undefined);
    return asked;
  }

  async stop(): Promise<void> {
    this.held = false;
    await this.proc.stop();
  }
}

let compiled: Promise<string> | undefined;

/**
 * Compiles CuratorPeer.java once per process into a fresh temp dir (removed at exit); resolves with
 * that dir.
 */
export function compileCuratorPeer(): Promise<string> {
  compiled ??= (async () => {
    requirePeers('curator');
    hookExit();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'baton-curator-peer-'));
    tempDirs.add(dir);
    const javac = new LineProcess(
      'javac CuratorPeer.java',
      'javac',
      ['-cp', curatorClasspath(), '-d', dir, path.join(PEERS_DIR, 'CuratorPeer.java')],
      () => undefined,
      { stdin: false },
    );
    if (!(await javac.waitExit(60_000))) {
      javac.kill('SIGKILL');
      await javac.waitExit(5_000);
      throw javac.failure('not done after 60 s');
    }
    if (javac.exit?.code !== 0) throw javac.failure(`failed with ${javac.exit?.code ?? javac.exit?.signal}`);
    return dir;
  })();
  // A failure is not cached: the next caller tries again (and reports it again).
  compiled.catch(() => (compiled = undefined));
  return compiled;
}

/** A Curator peer on `path`, connected (resolves after `ready`). `id` is its participant id and node data. */
export async function curatorPeer(opts: {
  connectString: string;
  path: string;
  recipe: CuratorRecipe;
  id?: string;
}): Promise<Peer> {
  const dir = await compileCuratorPeer();
  const id = opts.id ?? defaultId('curator');
  return ProtocolPeer.start(`curator ${opts.recipe} ${id}`, 'java', [
    ...JVM,
    '-cp',
    curatorClasspath(dir),
    'CuratorPeer',
    opts.connectString,
    opts.path,
    opts.recipe,
    id,
  ]);
}

/** A kazoo peer on `path`, connected (resolves after `ready`). `id` is its lock identifier (node data). */
export async function kazooPeer(opts: {
  connectString: string;
  path: string;
  recipe: KazooRecipe;
  id?: string;
}): Promise<Peer> {
  requirePeers('kazoo');
  const id = opts.id ?? defaultId('kazoo');
  // -u: unbuffered; -s and -E: none of the user's site packages or PYTHON* variables.
  return ProtocolPeer.start(`kazoo ${opts.recipe} ${id}`, KAZOO_PYTHON, [
    '-u',
    '-s',
    '-E',
    path.join(PEERS_DIR, 'kazoo_peer.py'),
    opts.connectString,
    opts.path,
    opts.recipe,
    id,
  ]);
}

// ---- etcdctl ----

/**
 * `etcdctl lock NAME` or `etcdctl elect NAME ID`, one process per acquire. etcdctl 3.4 prints the key it
 * holds (`NAME/LEASE_HEX`; `elect` then the proposal on a second line) once granted and holds until
 * SIGINT or SIGTERM, on which it deletes that key (Unlock, Resign) and exits 0; a process still waiting
 * deletes its key too and exits 1 with "Error: context canceled". It does not revoke its lease: the
 * lease (10 s for lock, 60 s for elect) outlives it, as do the keys of a process that was SIGKILLed.
 */
class EtcdctlProcessPeer implements EtcdctlPeer {
  private proc: LineProcess | undefined;
  grantedAt: number | undefined;

  constructor(
    readonly name: string,
    private readonly binary: string,
    private readonly endpoints: readonly string[],
    private readonly lockName: string,
    private readonly recipe: EtcdctlRecipe,
    private readonly id: string,
  ) {}

  get pid(): number | undefined {
    return this.proc?.alive ? this.proc.pid : undefined;
  }

  get lines(): readonly string[] {
    return this.proc?.lines ?? [];
  }

  get key(): string | undefined {
    return this.isGranted() ? this.proc!.lines[0] : undefined;
  }

  private global(): string[] {
    return [`--endpoints=${this.endpoints.join(',')}`, '--dial-timeout=5s', '--command-timeout=10s'];
  }

  acquire(): void {
    if (this.proc?.alive) throw this.proc.failure('acquire() while its etcdctl still runs');
    const args = this.recipe === 'lock' ? ['lock', this.lockName] : ['elect', this.lockName, this.id];
    // SIGTERM, like SIGINT, makes etcdctl delete its key before it exits.
    this.grantedAt = undefined;
    const onLine = (line: string): void => {
      if (line.startsWith(`${this.lockName}/`)) this.grantedAt ??= performance.now();
    };
    this.proc = new LineProcess(this.name, this.binary, [...this.global(), ...args], onLine, {
      stdin: false,
      stopSignal: 'SIGTERM',
    });
  }

  async granted(timeoutMs = DEFAULT_TIMEOUT_MS): Promise<void> {
    if (this.proc === undefined) throw new Error(`${this.name}: granted() without acquire()`);
    await this.proc.waitLine('granted', 0, timeoutMs, (line) => line.startsWith(`${this.lockName}/`));
  }

  isGranted(): boolean {
    return this.proc !== undefined && this.proc.alive && this.proc.lines.length > 0;
  }

  async release(timeoutMs = DEFAULT_TIMEOUT_MS): Promise<void> {
    const proc = this.proc;
    if (proc === undefined || !proc.alive) return;
    const wasGranted = this.isGranted();
    proc.kill('SIGINT');
    if (!(await proc.waitExit(timeoutMs))) {
      proc.kill('SIGKILL');
      await proc.waitExit(5_000);
      throw proc.failure(`did not exit within ${timeoutMs} ms of SIGINT (killed)`);
    }
    // A holder unlocks and exits 0; a waiter's Lock/Campaign fails with "context canceled" (1); one
    // that was not yet listening for signals (it has no key yet then) dies of the SIGINT.
    const { code, signal } = proc.exit!;
    if (!(code === 0 || (!wasGranted && (code === 1 || signal === 'SIGINT'))))
      throw proc.failure(`exited with ${code ?? signal} on SIGINT`);
  }

  /** election: the leader's proposal; lock: the holder's key. Read as etcd's Election.Leader reads. */
  leader(timeoutMs = DEFAULT_TIMEOUT_MS): Promise<string | null> {
    const args = [
      ...this.global(),
      'get',
      `${this.lockName}/`,
      '--prefix',
      '--sort-by=CREATE',
      '--order=ASCEND',
      '--limit=1',
      '-w',
      'json',
    ];
    return new Promise((resolve, reject) => {
      execFile(this.binary, args, { timeout: timeoutMs, encoding: 'utf8' }, (error, stdout, stderr) => {
        if (error) return reject(new Error(`${this.name}: etcdctl get failed: ${error.message}\n${stderr}`));
        try {
          const reply = JSON.parse(stdout) as { kvs?: { key: string; value?: string }[] };
          const first = reply.kvs?.[0];
          if (first === undefined) return resolve(null);
          const decode = (b64: string | undefined): string => Buffer.from(b64 ?? '', 'base64').toString('utf8');
          resolve(this.recipe === 'elect' ? decode(first.value) : decode(first.key));
        } catch (parseError) {
          reject(new Error(`${this.name}: unreadable etcdctl get reply: ${String(parseError)}\n${stdout}`));
        }
      });
    });
  }

  async stop(): Promise<void> {
    // SIGTERM: etcdctl deletes its key as on SIGINT; killed by PID after a bound.
    await this.proc?.stop();
  }
}

/**
 * An etcdctl peer for `name` (its keys are `name/LEASE_HEX`); `acquire()` starts the etcdctl process.
 * `id` is the election proposal (its key's value); lock keys hold no value.
 */
export async function etcdctlPeer(opts: {
  endpoints: string[];
  name: string;
  recipe: EtcdctlRecipe;
  id?: string;
}): Promise<EtcdctlPeer> {
  requirePeers('etcdctl');
  const id = opts.id ?? defaultId('etcdctl');
  return new EtcdctlProcessPeer(
    `etcdctl ${opts.recipe} ${id}`,
    etcdctlBinary()!,
    opts.endpoints,
    opts.name,
    opts.recipe,
    id,
  );
}
