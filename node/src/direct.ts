// Direct adds: a one-job `Queue.add` completed on a socket of the JS event loop, without the
// crossing to the addon's threads and back. The core decides and encodes (`directAdd`: the job
// checked, its id minted, the one add_one.lua call the usual path would send) and reads the reply
// (`directReplyLen`, `directSettle`; the core's queue/direct.rs); this file only moves bytes on a
// `net.Socket`, replies in the order the calls were written. Adds that arrive while others are on
// their way are pipelined on the same socket (up to `EMQ_DIRECT_ADD_DEPTH` unanswered, default
// 64), and the calls of one turn of the event loop leave in one write (flushed by `setImmediate`);
// past that depth an add goes the usual way. The adds of one synchronous stretch after the first
// (a loop of `add` calls, say) still go together through the handle's add line (`queue.ts`).
// Anything unusual goes the usual way with the same id (an add is idempotent per id): a job the
// core does not take (`directAdd` returns null), a reply that is not "added" (a script not loaded
// yet, a server error, a failover), a socket that fails or closes, a reply not read within 30 s.
// `EMQ_DIRECT_ADD=0` turns it off; `EMQ_DIRECT_ADD_DEPTH=1` sends only a lone add direct.

import * as net from 'net';
import { native } from './loader';
import type { NativeQueue } from './loader';

/** A reply not read within this many ms gives the socket up (the core's default response timeout). */
export let replyTimeoutMs = 30_000;
/** For tests: a shorter reply timeout. */
export function setReplyTimeoutMs(ms: number): void {
  replyTimeoutMs = ms;
}

const enabled = process.env.EMQ_DIRECT_ADD !== '0';

/** Most direct adds unanswered on one socket before the next goes the usual way. */
let depth = ((): number => {
  const v = Number.parseInt(process.env.EMQ_DIRECT_ADD_DEPTH ?? '', 10);
  return Number.isInteger(v) && v >= 1 ? Math.min(v, 4096) : 64;
})();
/** For tests: another depth (1 to 4096). */
export function setDepth(n: number): void {
  depth = Math.max(1, Math.min(n, 4096));
}

interface Waiting {
  id: string;
  at: number;
  settle: (id: string | null) => void;
}

/** One socket: calls written in order, replies settled in that order. */
class Conn {
  broken = false;
  readonly waiting: Waiting[] = [];
  private inbox: Buffer = Buffer.alloc(0);
  private watch: NodeJS.Timeout | null = null;
  /** Frames of this turn not written yet (one write at `setImmediate`). */
  private outbox: Buffer[] = [];

  constructor(readonly socket: net.Socket) {
    socket.setNoDelay(true);
    socket.on('data', (d: Buffer) => this.readable(d));
    socket.on('error', () => this.break());
    socket.on('close', () => this.break());
  }

  call(id: string, frame: Buffer): Promise<string | null> {
    return new Promise((settle) => {
      // A call on its way keeps the process alive (an idle socket does not).
      if (this.waiting.length === 0) this.socket.ref();
      this.waiting.push({ id, at: Date.now(), settle });
      if (this.watch === null) this.watch = setTimeout(() => this.check(), 1000).unref();
      if (this.outbox.push(frame) === 1) setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    const frames = this.outbox;
    this.outbox = [];
    if (this.broken || frames.length === 0) return;
    this.socket.write(frames.length === 1 ? frames[0] : Buffer.concat(frames));
  }

  private check(): void {
    this.watch = null;
    if (this.broken || this.waiting.length === 0) return;
    if (Date.now() - this.waiting[0].at > replyTimeoutMs) {
      this.break();
      return;
    }
    this.watch = setTimeout(() => this.check(), 1000).unref();
  }

  private readable(d: Buffer): void {
    this.inbox = this.inbox.length === 0 ? d : Buffer.concat([this.inbox, d]);
    while (this.waiting.length > 0) {
      const n = native.directReplyLen(this.inbox);
      if (n === null) break;
      const reply = this.inbox.subarray(0, n);
      this.inbox = this.inbox.subarray(n);
      const w = this.waiting.shift() as Waiting;
      w.settle(native.directSettle(reply, w.id));
    }
    if (this.waiting.length === 0) this.socket.unref();
    // Bytes no call asked for: the stream is out of step; add the usual way from now on.
    if (this.inbox.length > 0 && this.waiting.length === 0) this.break();
  }

  /** Every call on this socket goes the usual way (settled null); the socket is closed. */
  break(): void {
    if (this.broken) return;
    this.broken = true;
    if (this.watch !== null) clearTimeout(this.watch);
    this.outbox = [];
    for (const w of this.waiting.splice(0)) w.settle(null);
    this.socket.destroy();
  }
}

/** A queue handle's direct adds: one socket, opened at the first add, while the core names an endpoint. */
export class DirectAdds {
  private endpoint: { host: string; port: number } | null;
  private conn: Conn | null = null;
  private opening: Promise<Conn | null> | null = null;

  constructor(private readonly nativeQueue: NativeQueue) {
    this.endpoint = enabled ? nativeQueue.directEndpoint() : null;
  }

  /** The socket of a direct add now, or null (the usual way); opens one in the background. */
  ready(): Conn | null {
    if (this.endpoint === null) return null;
    const c = this.conn;
    if (c !== null && !c.broken) return c.waiting.length < depth ? c : null;
    if (this.opening === null) this.opening = this.open();
    return null;
  }

  /**
   * A direct add of a one-job add (payload and options as JSON text), or null when it goes
   * the usual way. Resolves to the id, or to null: add it the usual way with the id returned in
   * `again`.
   */
  add(name: string, text: string, opts: string | undefined): { id: string; settled: Promise<string | null> } | null {
    const c = this.ready();
    if (c === null) return null;
    const call = this.nativeQueue.directAdd(name, text, opts);
    if (call === null) return null;
    return { id: call.id, settled: c.call(call.id, call.frame) };
  }

  private open(): Promise<Conn | null> {
    const ep = this.endpoint as { host: string; port: number };
    return new Promise((resolve) => {
      const socket = net.connect({ host: ep.host, port: ep.port });
      const fail = (): void => {
        socket.destroy();
        // The core's own connection reaches the server some other way: use it from now on.
        this.endpoint = null;
        this.opening = null;
        resolve(null);
      };
      socket.setTimeout(5000, fail);
      socket.once('error', fail);
      socket.once('connect', () => {
        socket.setTimeout(0);
        socket.removeListener('error', fail);
        this.conn = new Conn(socket);
        // Idle, a socket does not keep the process alive.
        socket.unref();
        this.opening = null;
        resolve(this.conn);
      });
    });
  }

  close(): void {
    this.conn?.break();
    this.conn = null;
  }
}
