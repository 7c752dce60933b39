import { type Etcd3, GRPCDeadlineExceededError, GRPCUnavailableError, type ICallable, LeaseClient } from 'etcd3';

import { type Done, started } from '../requests.js';

/** What etcd3 1.x keeps per member; only the address is read. */
interface Member {
  readonly host: string;
}

/** The parts of etcd3's connection pool this module uses. Not public API; checked when installed. */
interface Pool {
  hosts: Member[];
  shuffledHosts: () => Generator<Member, never, unknown>;
  withConnection: ICallable<Member>['withConnection'];
  exec: ICallable<Member>['exec'];
  markFailed: ICallable<Member>['markFailed'];
  readonly callOptionsFactory: ICallable<Member>['callOptionsFactory'];
}

/** The member an order last offered: with no circuit breaker, the one etcd3 sent the call to. */
interface Pick {
  member: string | undefined;
}

/**
 * Which members of the cluster this session has seen stop answering, and for how long to try the others
 * first. etcd3 picks a member at random for every call and every stream, so a member that hangs (a long
 * pause, a full disk, a network fault between us and it alone) keeps getting a third of the work of a
 * 3-member cluster: a keepalive stream dialled again after a stall lands on it again one time in three,
 * and two such stalls in a row cost a healthy session its lease. Here every call, stream and watch tries
 * the members not under suspicion first (in random order, as before), then the rest.
 *
 * It replaces etcd3's member order on the one client it is given. When etcd3's internals are not the
 * ones it knows, it changes nothing and the session works as before, only without the preference.
 */
export class Members {
  readonly #pool: Pool | undefined;
  /** Member address -> until when (performance.now()) it is tried last. */
  readonly #suspects = new Map<string, number>();
  /** The member order etcd3 asked for last (`send` reads it right after starting its call). */
  #picked: Pick | undefined;

  constructor(client: Etcd3) {
    const pool = (client as unknown as { pool?: Partial<Pool> }).pool;
    if (
      pool === undefined ||
      !Array.isArray(pool.hosts) ||
      typeof pool.withConnection !== 'function' ||
      typeof pool.shuffledHosts !== 'function'
    ) {
      this.#pool = undefined;
      return;
    }
    this.#pool = pool as Pool;
    this.#pool.shuffledHosts = () => {
      const pick: Pick = { member: undefined };
      this.#picked = pick;
      return this.#order(pick);
    };
  }

  /** Whether the member preference is in place (false on an etcd3 whose internals changed). */
  get installed(): boolean {
    return this.#pool !== undefined;
  }

  /** Tries `host` last for the next `forMs`. */
  suspect(host: string, forMs: number): void {
    this.#suspects.set(host, performance.now() + forMs);
  }

  /**
   * Sends one attempt of a unary request and reports its outcome to `done`. `start` must begin exactly
   * one etcd3 call (etcd3 asks for the member order synchronously when a call begins). An attempt that
   * ran out its deadline, or found its member unavailable, has that member tried last for `forMs`.
   */
  send<T>(start: () => Promise<T>, forMs: number, done: Done<T>): void {
    this.#picked = undefined;
    const call = start();
    const pick = this.#picked as Pick | undefined;
    this.#picked = undefined;
    call.then(
      (value) => done(null, value),
      (error: unknown) => {
        if (
          pick?.member !== undefined &&
          (error instanceof GRPCDeadlineExceededError || error instanceof GRPCUnavailableError)
        ) {
          this.suspect(pick.member, forMs);
        }
        done(error || new Error(`etcd request failed: ${String(error)}`));
      },
    );
  }

  /** `send` as a promise, for the requests outside the driver's bookkeeping (connect, close). */
  attempt<T>(start: () => Promise<T>, forMs: number): Promise<T> {
    return started((done) => this.send(start, forMs, done));
  }

  /**
   * A lease client whose keepalive streams report the member they were dialled to, so that a stream
   * that stalls can name the member to avoid. Falls back to the client's own (no member known).
   */
  leaseClient(client: Etcd3): { lease: LeaseClient; member: (stream: object) => string | undefined } {
    const pool = this.#pool;
    if (pool === undefined) return { lease: client.leaseClient, member: () => undefined };
    // Per stream, not the last one dialled: with auth, two opens can wait on one token fetch.
    const members = new WeakMap<object, string>();
    const lease = new LeaseClient({
      exec: (service, method, params, options) => pool.exec(service, method, params, options),
      withConnection: (service, fn) =>
        pool.withConnection(service, (args) => {
          const made = fn(args);
          if (typeof made === 'object' && made !== null && !(made instanceof Promise))
            members.set(made, args.resource.host);
          return made;
        }),
      markFailed: (resource, error) => pool.markFailed(resource as Member, error),
      get callOptionsFactory() {
        return pool.callOptionsFactory;
      },
    });
    return { lease, member: (stream) => members.get(stream) };
  }

  /** Endless, like etcd3's own: each round a fresh shuffle, members under suspicion last. */
  *#order(pick: Pick): Generator<Member, never, unknown> {
    const hosts = this.#pool!.hosts.slice();
    for (;;) {
      for (let i = hosts.length - 1; i > 0; i -= 1) {
        const j = Math.floor((i + 1) * Math.random());
        [hosts[i], hosts[j]] = [hosts[j]!, hosts[i]!];
      }
      if (this.#suspects.size > 0) this.#suspectsLast(hosts);
      for (const host of hosts) {
        pick.member = host.host;
        yield host;
      }
    }
  }

  /** Moves the members under suspicion to the end, keeping the shuffled order of each part. */
  #suspectsLast(hosts: Member[]): void {
    const now = performance.now();
    for (const [host, until] of this.#suspects) if (until <= now) this.#suspects.delete(host);
    const trusted = hosts.filter((host) => !this.#suspects.has(host.host));
    if (trusted.length === hosts.length) return;
    const doubted = hosts.filter((host) => this.#suspects.has(host.host));
    hosts.splice(0, hosts.length, ...trusted, ...doubted);
  }
}
