// The awaited one-job add's way back from the addon (bindings/node/src/add_line.rs): an add goes
// out as a plain call, `addStart(seq, ...)`, and its outcome comes back on the queue handle's one
// threadsafe function, made at the handle's first add, instead of the promise, deferred and
// threadsafe function napi makes for each `async` call. Outcomes settled while JS was busy come
// back together, in one call.

import { emqError, toEmqError } from './errors';
import type { JobId } from './types';
import type { NativeQueue } from './loader';

interface Waiting {
  resolve: (id: JobId) => void;
  reject: (e: Error) => void;
}

/**
 * The adds of one queue handle still waiting for their outcome, by sequence number. The taker
 * given to the addon (kept by its threadsafe function for as long as the handle lives) holds only
 * the waiting adds, not this line or the queue.
 */
export class AddLine {
  private seq = 0;
  private readonly waiting = new Map<number, Waiting>();

  constructor(private readonly native: NativeQueue) {
    const waiting = this.waiting;
    native.listenAdds((settled: string) => {
      for (const [seq, o] of JSON.parse(settled) as [number, string][]) {
        const w = waiting.get(seq);
        if (w === undefined) continue;
        waiting.delete(seq);
        if (o.charCodeAt(0) !== 33 /* '!' */) w.resolve(o as JobId);
        else {
          const colon = o.indexOf(':');
          w.reject(emqError(o.slice(1, colon), o.slice(colon + 1)));
        }
      }
    });
  }

  /** Adds one job (its payload and options already JSON text); resolves to its id. */
  add(name: string, text: string, opts: string | undefined): Promise<JobId> {
    const seq = (this.seq = (this.seq + 1) & 0x3fffffff);
    return new Promise<JobId>((resolve, reject) => {
      this.waiting.set(seq, { resolve, reject });
      try {
        this.native.addStart(seq, name, text, opts);
      } catch (e) {
        this.waiting.delete(seq);
        reject(toEmqError(e));
      }
    });
  }
}
