// EventStream: a subscriber on a queue's events (from `queue.events()`).

import { call, emqError } from './errors';
import { kNative, kToken } from './loader';
import type { NativeEvents } from './loader';
import type { QueueEvent } from './types';

/**
 * A subscriber on a queue's events (from `queue.events()`). Each event is
 * `{ streamId, kind, jobId, fields }`; `kind` is added, active, completed, retrying, failed,
 * stalled, released, removed, progress, paused, resumed, ... Iterate with `for await`, or call
 * `next()`. `close()` ends it (a read in progress resolves at once, and the iteration stops).
 */
export class EventStream implements AsyncIterable<QueueEvent> {
  /** @internal */
  readonly [kNative]: NativeEvents;
  /** True once `close` was called. */
  closed: boolean;

  private constructor(token: symbol, nativeEvents: NativeEvents) {
    if (token !== kToken) throw emqError('invalid_option', 'use `await queue.events()`');
    this[kNative] = nativeEvents;
    this.closed = false;
  }

  /** @internal As `queue.events()` opens one. */
  static open(token: symbol, nativeEvents: NativeEvents): EventStream {
    return new EventStream(token, nativeEvents);
  }

  /** The next events, waiting up to `wait` ms (default 1000) for the first; [] when none came or once closed. */
  async next({ wait = 1000, count = 100 }: { wait?: number; count?: number } = {}): Promise<QueueEvent[]> {
    if (this.closed) return [];
    return JSON.parse(await call(() => this[kNative].next(wait, count)));
  }

  /** Ends the subscription; a read in progress resolves to [] at once. */
  close(): void {
    this.closed = true;
    this[kNative].close();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<QueueEvent> {
    try {
      while (!this.closed) {
        for (const ev of await this.next()) {
          yield ev;
          if (this.closed) return;
        }
      }
    } finally {
      this.close();
    }
  }
}
