import type * as otel from '@opentelemetry/api';

import type { HoldMessage, WaitMessage } from '../../recipes/trace.js';
import { ATTRIBUTES, endAttributes, holdAttributes, outcomeOf, startAttributes } from './attributes.js';

/** The span events, by what happened. */
export const EVENTS = {
  granted: 'baton.lock.granted',
  released: 'baton.lock.released',
  lost: 'baton.lock.lost',
  heldTooLong: 'baton.lock.held_too_long',
} as const;

/**
 * The spans of waits and holds, kept on the channels' messages (weakly: a message nobody ends, as a
 * hold never released before the process exits, leaves nothing behind).
 */
export class LockSpans {
  readonly #waits = new WeakMap<WaitMessage, otel.Span>();
  readonly #holds = new WeakMap<HoldMessage, otel.Span>();

  constructor(
    private readonly api: typeof otel,
    private readonly tracer: otel.Tracer,
  ) {}

  /** Called at the tracing channel's `start`, synchronously in the caller's context: its span is the parent. */
  waitStarted(message: WaitMessage): void {
    const { api } = this;
    const span = this.tracer.startSpan(
      `baton.${message.operation}`,
      { kind: api.SpanKind.INTERNAL, attributes: startAttributes(message) },
      api.context.active(),
    );
    this.#waits.set(message, span);
  }

  waitEnded(message: WaitMessage): void {
    const span = this.#waits.get(message);
    if (span === undefined) return; // started before this instrumentation subscribed
    this.#waits.delete(message);
    const outcome = outcomeOf(message);
    span.setAttributes(endAttributes(message));
    if (outcome === 'granted' && message.fencingToken !== undefined) {
      span.addEvent(EVENTS.granted, { [ATTRIBUTES.fencingToken]: message.fencingToken.toString() });
    }
    // A timeout or a failure is the operation not doing what it was asked; an abort is the caller's choice.
    if (outcome === 'timedOut' || outcome === 'failed') this.#fail(span, message.error);
    span.end();
  }

  /** A grant: the hold's span starts as a child of its wait's (still open: the grant comes before the wait ends). */
  holdStarted(hold: HoldMessage): void {
    const { api } = this;
    const wait = this.#waits.get(hold.wait);
    const parent = wait === undefined ? api.context.active() : api.trace.setSpan(api.context.active(), wait);
    const span = this.tracer.startSpan(
      'baton.hold',
      { kind: api.SpanKind.INTERNAL, attributes: holdAttributes(hold) },
      parent,
    );
    this.#holds.set(hold, span);
  }

  holdEnded(hold: HoldMessage, how: 'released' | 'lost'): void {
    const span = this.#holds.get(hold);
    if (span === undefined) return;
    this.#holds.delete(hold);
    const duration = { [ATTRIBUTES.holdDuration]: (hold.holdMs ?? 0) / 1_000 };
    span.addEvent(EVENTS[how], duration);
    span.setAttributes(duration);
    if (how === 'lost') this.#fail(span, hold.reason);
    span.end();
  }

  heldTooLong(hold: HoldMessage): void {
    this.#holds.get(hold)?.addEvent(EVENTS.heldTooLong, { [ATTRIBUTES.holdDuration]: (hold.holdMs ?? 0) / 1_000 });
  }

  #fail(span: otel.Span, error: unknown): void {
    const type = error instanceof Error ? error.name : 'Error';
    span.setAttribute(ATTRIBUTES.errorType, type);
    if (error instanceof Error) span.recordException(error);
    span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : type });
  }
}
