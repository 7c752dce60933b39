/**
 * `connect()` options checked: the ones every backend shares here, each backend's own by its
 * descriptor. Every key is checked whatever the URL (a bad value is a mistake whichever backend it
 * was meant for); then each backend refuses its keys where they would be ignored.
 */
import { InvalidArgumentError } from '../recipes/errors.js';
import { checkOptionKeys, validateSignal } from '../recipes/validate.js';
import type { Backend, CommonSettings, ParsedUrl } from './backends/backend.js';
import { flag, isPlainObject, oneOf, positiveMs } from './backends/option-checks.js';
import { BACKENDS } from './backends/registry.js';

/** Every option validated: the shared ones, and each backend's own (by backend). */
export interface Settings extends CommonSettings {
  readonly deadlineMarginMs: number | undefined;
  readonly onSuspend: 'wait' | 'abort';
  readonly onWaiterLost: 'requeue' | 'fail';
  readonly reconnectAfterLoss: boolean;
  /** What each backend's `options.check` returned. */
  readonly own: ReadonlyMap<Backend, unknown>;
}

const DEFAULTS = { sessionTimeoutMs: 10_000, connectTimeoutMs: 15_000 } as const;
const COMMON_KEYS = [
  'sessionTimeoutMs',
  'connectTimeoutMs',
  'deadlineMarginMs',
  'onSuspend',
  'onWaiterLost',
  'reconnectAfterLoss',
  'signal',
];
const KNOWN_KEYS = [...COMMON_KEYS, ...BACKENDS.flatMap((backend) => backend.options.keys)];

/** Checks every option (an unknown key is refused, naming the nearest known one). */
export function validateConnectOptions(options: unknown): Settings {
  if (!isPlainObject(options)) throw new InvalidArgumentError('connect options', options, 'an object');
  checkOptionKeys(options, KNOWN_KEYS);
  const common = commonSettings(options);
  const own = new Map(BACKENDS.map((backend) => [backend, backend.options.check(options, common)] as const));
  return {
    ...common,
    deadlineMarginMs:
      options['deadlineMarginMs'] === undefined
        ? undefined
        : positiveMs(options['deadlineMarginMs'], 'deadlineMarginMs', 0),
    onSuspend: oneOf(options['onSuspend'], 'onSuspend', ['wait', 'abort']),
    onWaiterLost: oneOf(options['onWaiterLost'], 'onWaiterLost', ['requeue', 'fail']),
    reconnectAfterLoss: flag(options['reconnectAfterLoss'], 'reconnectAfterLoss'),
    own,
  };
}

function commonSettings(given: Readonly<Record<string, unknown>>): CommonSettings {
  return {
    sessionTimeoutMs: positiveMs(given['sessionTimeoutMs'], 'sessionTimeoutMs', DEFAULTS.sessionTimeoutMs),
    sessionTimeoutGiven: given['sessionTimeoutMs'] !== undefined,
    connectTimeoutMs: positiveMs(given['connectTimeoutMs'], 'connectTimeoutMs', DEFAULTS.connectTimeoutMs),
    signal: validateSignal(given['signal']),
  };
}

/**
 * The options that do not fit the URL: another backend's options given where they would be ignored,
 * or the URL's backend's own options contradicting its URL.
 */
export function refuseMisfits(settings: Settings, backend: Backend, url: ParsedUrl): void {
  for (const [other, own] of settings.own) {
    if (other !== backend) other.options.refuseElsewhere?.(own, url.scheme);
  }
  backend.options.fitUrl?.(settings.own.get(backend), url);
}
