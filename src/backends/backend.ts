/**
 * What a backend tells the rest of baton about itself: one `Backend` descriptor per folder of
 * `src/backends/` (its `index.ts`), listed in `registry.ts`. `connect`, the URL parser, the CLI and
 * `baton-locks/testing` read descriptors and know no backend by name.
 */
import type { Session } from '../../recipes/contract.js';
import type { Driver } from '../driver-port.js';
import type { ConnectOptions } from '../options.js';

/**
 * A connection URL taken apart by its backend: `scheme` names the backend (its descriptor's `scheme`),
 * `target` is whatever else the backend reads from the URL (undefined where it needs nothing more).
 */
export interface ParsedUrl<Target = unknown> {
  /** The backend's scheme, `zk` for `zookeeper://` too. */
  readonly scheme: string;
  /** `host:port` each; for memory, the store's name; empty where the backend's client reads the URL itself. */
  readonly hosts: readonly string[];
  /** Path segments under which every queue lives, without leading or trailing `/`. */
  readonly namespace: string;
  /** The backend's own part of the URL (database, credentials, TLS...). */
  readonly target: Target;
}

/** The options every backend shares, validated (defaults filled in). */
export interface CommonSettings {
  readonly sessionTimeoutMs: number;
  /** Whether `sessionTimeoutMs` was given (etcd's TTL follows it only then). */
  readonly sessionTimeoutGiven: boolean;
  readonly connectTimeoutMs: number;
  readonly signal: AbortSignal | undefined;
}

/**
 * A backend's `connect()` options: which keys it owns, how their values are checked (on every URL, as
 * a bad value is a mistake whichever backend it was meant for), and where they may not be given.
 */
export interface BackendOptions<Target, Own> {
  /** The `ConnectOptions` keys this backend owns. */
  readonly keys: readonly (keyof ConnectOptions)[];
  /** Checks the given values of its keys; returns them validated, defaults filled in. */
  check(given: Readonly<Record<string, unknown>>, common: CommonSettings): Own;
  /** Throws `InvalidArgumentError` for its options given with a URL of another backend, where they would be ignored. */
  refuseElsewhere?(own: Own, scheme: string): void;
  /** Throws `InvalidArgumentError` for its options that contradict its own URL. */
  fitUrl?(own: Own, url: ParsedUrl<Target>): void;
}

/** What a backend's `open` is given: the URL, its options, the shared settings, and a test probe if any. */
export interface OpenRequest<Target, Own> {
  readonly url: ParsedUrl<Target>;
  readonly own: Own;
  readonly sessionTimeoutMs: number;
  /** What is left of the connect timeout. */
  readonly connectTimeoutMs: number;
  readonly signal: AbortSignal | undefined;
  /** The probe `baton-locks/testing` made for this driver (from the descriptor's `testing`); undefined in production. */
  readonly probe: unknown;
}

/**
 * A backend's part of `baton-locks/testing`, loaded only by that module: it makes a probe for each
 * driver the test build opens, and hears of the session opened over it.
 */
export interface TestKit {
  /** A probe for one driver; the backend's driver knows its type. */
  newProbe(): unknown;
  /** The session opened over a driver given `probe`: the kit keeps it for its `...ProbeOf(session)`. */
  opened(session: object, probe: unknown): void;
}

/** What the `baton` command needs of a backend. */
export interface CliSupport<Target> {
  /** A URL for the help texts, e.g. `zk://127.0.0.1:2181/<namespace>`; none: not shown as an example. */
  example?(namespace: string): string;
  /** The environment variables its credentials are read from, for the help of every command that connects. */
  readonly credentialsHelp?: string;
  /** Its credentials from the environment (never from arguments, which any user can read in `ps`). */
  credentials?(env: NodeJS.ProcessEnv): ConnectOptions;
  /** A warning for a password in a URL given as an argument, if the URL holds one. */
  passwordWarning?(url: string): string | undefined;
  /** `baton schema`: a backend with tables of its own to create. */
  readonly schema?: SchemaSupport<Target>;
}

/** `baton schema` for a backend with a schema to create. */
export interface SchemaSupport<Target> {
  /** What URLs it takes, for the error a URL of another backend gets: `a postgres:// or postgresql:// URL`. */
  readonly urls: string;
  /** The `<url>` argument's help: its form, and where its password comes from. */
  readonly urlHelp: string;
  /** The SQL that creates it (one transaction), for `--print`. */
  sql(target: Target): string;
  /** Creates it now; says whether it was created or there already, and where. */
  apply(target: Target, connectTimeoutMs: number): Promise<string>;
}

/**
 * One backend: its URL schemes and parsing, its `connect()` options, how its driver is opened, its
 * test probe, and what the CLI needs. Adding a backend is a folder with an `index.ts` exporting one
 * of these, its line in `registry.ts`, and its lines in `public.ts` and `test-kits.ts` if it has
 * options or a test kit.
 */
export interface Backend<Target = unknown, Own = unknown> {
  /** The scheme a parsed URL names it by (`ParsedUrl.scheme`), and the first of its URL schemes. */
  readonly scheme: string;
  /** Its name in messages: `ZooKeeper`, `etcd`. */
  readonly title: string;
  /** The URL schemes listed in messages (lowercase, no colon): `['redis', 'rediss']`. */
  readonly schemes: readonly string[];
  /** Schemes it also answers to, not listed: `['zookeeper']`. */
  readonly aliases?: readonly string[];
  /** Its URL's form, for the error a bad URL gets. */
  readonly urlForm: string;
  /** Parses a URL of one of its schemes; `expected` lists every backend's form, for its errors. */
  parseUrl(url: string, expected: string): ParsedUrl<Target>;
  /** Host names are looked up before the dial, so that one that does not exist fails at once. */
  readonly resolvesHosts: boolean;
  /** A backend whose "server" lives in this process: it can end a session as an expiry would. */
  readonly inProcess?: { expire(session: Session): void };
  /** Its `connect()` options. */
  readonly options: BackendOptions<Target, Own>;
  /** Opens a driver (its client loaded only now: etcd3 brings gRPC, which a ZooKeeper user never needs). */
  open(request: OpenRequest<Target, Own>): Promise<Driver>;
  /** Its part of `baton-locks/testing`, loaded only there; none: its drivers take no probe. */
  readonly testing?: () => Promise<TestKit>;
  /** What the `baton` command needs. */
  readonly cli: CliSupport<Target>;
}
