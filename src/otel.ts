/**
 * `baton-locks/otel`: OpenTelemetry spans (and, if asked, metrics) of lock waits and holds, through
 * `@opentelemetry/api` only, an optional peer dependency (importing this module without it fails with a
 * message saying to install it; the rest of the package never loads it). It subscribes to the
 * `diagnostics_channel` channels the recipes publish on (docs/observability.md).
 *
 *   const stop = instrumentLocks();                    // the global tracer provider
 *   const stop = instrumentLocks({ tracerProvider, metrics: true, meterProvider });
 */
import type * as otel from '@opentelemetry/api';

import { InvalidArgumentError } from '../recipes/errors.js';
import { CHANNELS, type HoldMessage, type WaitMessage } from '../recipes/trace.js';
import { checkOptionKeys } from '../recipes/validate.js';
import { loadPeer } from './metrics/peer.js';
import { OtelInstruments } from './otel/instruments.js';
import { SessionInstruments } from './otel/sessions.js';
import { LockSpans } from './otel/spans.js';
import { SESSION_STATE_CHANNEL, type SessionStateMessage } from './session-channel.js';

const api: typeof otel = await loadPeer('@opentelemetry/api', 'baton-locks/otel', () => import('@opentelemetry/api'));

/** Options of `instrumentLocks()`. */
export interface InstrumentLocksOptions {
  /** Where the spans go. Default: the global tracer provider (`trace.getTracerProvider()`). */
  readonly tracerProvider?: otel.TracerProvider;
  /** Also record the `baton-locks/metrics` metrics as OpenTelemetry instruments. Default false. */
  readonly metrics?: boolean;
  /** Where those instruments are made. Default: the global meter provider. */
  readonly meterProvider?: otel.MeterProvider;
  /** The `baton.lock.name` of a lock name in metrics (spans keep the full name). Default: the name. */
  readonly lockLabel?: (name: string) => string;
}

const KNOWN = ['tracerProvider', 'metrics', 'meterProvider', 'lockLabel'] as const;

/** The instrumentation scope's name: the package's. */
export const INSTRUMENTATION_NAME = 'baton-locks';

/**
 * Starts tracing every lock wait and hold in this process: a span per wait (`baton.acquire`,
 * `baton.campaign`, `baton.permits`) parented to the caller's active context, and a `baton.hold` span
 * per grant, child of its wait. Returns the function that stops it (spans under way are still ended,
 * and the up-down counters give back what they still count, so that they read zero).
 * Throws `InvalidArgumentError` for bad options.
 */
export function instrumentLocks(options: InstrumentLocksOptions = {}): () => void {
  const checked = checkOptions(options);
  const tracer = (checked.tracerProvider ?? api.trace.getTracerProvider()).getTracer(INSTRUMENTATION_NAME);
  const spans = new LockSpans(api, tracer);
  const meter =
    checked.metrics === true
      ? (checked.meterProvider ?? api.metrics.getMeterProvider()).getMeter(INSTRUMENTATION_NAME)
      : undefined;
  const instruments = meter && new OtelInstruments(meter, checked.lockLabel ?? ((name) => name));
  const waits = {
    start: (message: WaitMessage) => {
      spans.waitStarted(message);
      instruments?.waitStarted(message);
    },
    end: () => undefined,
    asyncStart: () => undefined,
    asyncEnd: (message: WaitMessage) => {
      spans.waitEnded(message);
      instruments?.waitEnded(message);
    },
    error: () => undefined,
  };
  const onHold = {
    granted: (hold: HoldMessage) => spans.holdStarted(hold),
    released: (hold: HoldMessage) => {
      spans.holdEnded(hold, 'released');
      instruments?.holdEnded(hold, false);
    },
    lost: (hold: HoldMessage) => {
      spans.holdEnded(hold, 'lost');
      instruments?.holdEnded(hold, true);
    },
    heldTooLong: (hold: HoldMessage) => {
      spans.heldTooLong(hold);
      instruments?.heldTooLong(hold);
    },
  };
  const stopLocks = subscribeAll(waits, onHold);
  const stopSessions = meter === undefined ? () => undefined : countSessions(new SessionInstruments(meter));
  return () => {
    stopLocks();
    stopSessions();
    instruments?.stop();
  };
}

/** Feeds the session instruments from `baton-locks:session:state` until the returned function is called. */
function countSessions(sessions: SessionInstruments): () => void {
  const listener = (message: unknown): void => sessions.changed(message as SessionStateMessage);
  SESSION_STATE_CHANNEL.subscribe(listener);
  let stopped = false;
  return () => {
    if (stopped) return;
    stopped = true;
    SESSION_STATE_CHANNEL.unsubscribe(listener);
    sessions.stop();
  };
}

type HoldHandlers = Record<'granted' | 'released' | 'lost' | 'heldTooLong', (hold: HoldMessage) => void>;

function subscribeAll(
  waits: Parameters<(typeof CHANNELS)['acquire']['subscribe']>[0],
  holds: HoldHandlers,
): () => void {
  const tracing = [CHANNELS.acquire, CHANNELS.campaign, CHANNELS.permits];
  for (const channel of tracing) channel.subscribe(waits);
  const plain = Object.entries(holds).map(([name, handler]) => {
    const channel = CHANNELS[name as keyof HoldHandlers];
    const listener = (message: unknown): void => handler(message as HoldMessage);
    channel.subscribe(listener);
    return () => channel.unsubscribe(listener);
  });
  let stopped = false;
  return () => {
    if (stopped) return;
    stopped = true;
    for (const channel of tracing) channel.unsubscribe(waits);
    for (const unsubscribe of plain) unsubscribe();
  };
}

function checkOptions(options: unknown): InstrumentLocksOptions {
  if (typeof options !== 'object' || options === null)
    throw new InvalidArgumentError('instrumentLocks options', options, 'an object');
  checkOptionKeys(options, KNOWN);
  const { tracerProvider, meterProvider, metrics, lockLabel } = options as Record<string, unknown>;
  if (tracerProvider !== undefined && typeof (tracerProvider as otel.TracerProvider | null)?.getTracer !== 'function')
    throw new InvalidArgumentError('tracerProvider', tracerProvider, 'an OpenTelemetry TracerProvider');
  if (meterProvider !== undefined && typeof (meterProvider as otel.MeterProvider | null)?.getMeter !== 'function')
    throw new InvalidArgumentError('meterProvider', meterProvider, 'an OpenTelemetry MeterProvider');
  if (metrics !== undefined && typeof metrics !== 'boolean')
    throw new InvalidArgumentError('metrics', metrics, 'true or false');
  if (lockLabel !== undefined && typeof lockLabel !== 'function')
    throw new InvalidArgumentError('lockLabel', lockLabel, 'a function');
  return options;
}
