// Type-checked (never run) against the generated node/dist/index.d.ts by node/ci.sh: `tsc --noEmit --strict`.
// Each call mirrors the README and the tests; each `@ts-expect-error` line must stay an error.
import {
  Queue, Worker, JobId, JobOptions, ActiveJob, Counts, EmqError, InvalidJobId, UnrecoverableError,
  ErrorCode, errorCodes, QueueEvent, SchedulerInfo, FlowIds, Job,
  CancelOutcome, WorkerInfo, JobInterrupted, HandlerFailed, Timeout, ConnectOptions,
  GroupInfo, GroupFull,
} from '../../dist/index';

interface Email { to: string; n: number }

export async function usage(): Promise<void> {
  const q: Queue = await Queue.connect('redis://127.0.0.1:6379', 'orders');
  const qc: Queue = await Queue.connect(['redis://127.0.0.1:7000', 'redis://127.0.0.1:7001'], '{orders}');
  const tls: ConnectOptions = { caCert: '/etc/emq/ca.pem', clientCert: new Uint8Array(0), clientKey: '-----BEGIN PRIVATE KEY-----' };
  const qt: Queue = await Queue.connect('rediss://emq:secret@127.0.0.1:6380', 'orders', tls);
  // @ts-expect-error a TLS file is a string or bytes
  await Queue.connect('rediss://127.0.0.1:6380', 'orders', { caCert: 42 });
  const opts: JobOptions = {
    delay: 100, priority: 1, lifo: false, attempts: 3, backoff: { type: 'exponential', delay: 50, max: 1000 },
    jitter: 0.2, lease: 30_000, timeout: 5_000, removeOnComplete: true, dedup: 'k', dedupTtl: 60_000,
    group: 'tenant-7', parentPolicy: 'ignore',
  };
  const id: JobId = await q.add<Email>('email', { to: 'a@example.com', n: 1 }, opts);
  const fixed: JobId = await q.add('retry', null, { backoff: 200, id });
  const minted: JobId = q.mintId();
  await q.add('minted', 1, { id: minted });
  const ids: JobId[] = await q.addBulk([{ name: 'a', data: 1 }, { name: 'b', data: 2, opts: { delay: 5 } }]);
  const job: Job<Email, string> | null = await q.get<Email, string>(id);
  if (job) {
    const to: string = job.data.to;
    const result: string | null = job.result;
    const created: number = job.createdMs;
    void [to, result, created, job.failure?.code];
  }
  const c: Counts = await q.counts();
  const waiting: number = c.waiting + c.active + c.delayed;
  await q.pause();
  const reranked: boolean = await q.changePriority(id, 2);
  const paused: boolean = await q.isPaused();
  await q.resume();
  const page: Job[] = await q.list('completed', { offset: 0, limit: 10 });
  const removed: boolean = await q.remove(ids[0]);
  await q.drain({ delayed: true });
  await q.clean('failed', { grace: 1_000, limit: 100 });
  await q.setRateLimit({ max: 10, window: 1_000 });
  await q.setGroupRateLimit(null);
  await q.setGlobalConcurrency(5);
  const created: boolean = await q.upsertScheduler('nightly', { cron: '0 3 * * *', tz: 'Europe/Berlin', name: 'report' });
  const schedulers: SchedulerInfo[] = await q.schedulers();
  const flow: FlowIds = await q.addFlow({ name: 'report', data: {}, children: [{ name: 'part', data: 1 }] });
  const extra: JobId = await q.addChild(flow.id, 'parts', 'part', 2, { priority: 1 });
  void extra;
  const stream = await q.events();
  for await (const ev of stream) {
    const e: QueueEvent = ev;
    if (e.kind === 'completed') break;
  }
  stream.close();

  const worker: Worker<Email, { sent: boolean }> = new Worker<Email, { sent: boolean }>(
    q,
    async (j: ActiveJob<Email>) => {
      await j.updateProgress({ step: 1 });
      await j.log(`sending ${j.data.n}`);
      const fence: number = j.fence;
      void fence;
      const child: JobId = await j.addChild('emails-parts', 'part', { n: 1 }, { attempts: 2 });
      void child;
      if (j.data.n < 0) throw new UnrecoverableError('bad input');
      return { sent: j.data.to.length > 0 };
    },
    { concurrency: 10, lease: 30_000, blockTimeout: 5_000, shutdownTimeout: 10_000 },
  );
  const started = await Worker.start(q, () => null);
  const given: number = await worker.close({ timeout: 1_000 });
  await started.close();
  const done: number = worker.stats().completed;
  const retried: number = worker.stats().retried;
  void retried;

  // Worker control: signals, cancel, wait, events, retention, the registry.
  const controlled = new Worker<Email, number>(
    q,
    (j) =>
      new Promise<number>((resolve, reject) => {
        if (j.signal.aborted) return reject(j.signal.reason);
        j.signal.addEventListener('abort', () => {
          const why: JobInterrupted = j.signal.reason;
          const code: 'cancelled' | 'timeout' | 'shutdown' = why.code;
          reject(why);
          void code;
        });
        resolve(j.data.n);
      }),
    {
      shutdownTimeout: 5_000, handleSignals: true,
      removeOnComplete: { count: 100, age: 3_600_000 }, removeOnFail: 1_000,
    },
  );
  controlled.closeOnSignals({ signals: ['SIGTERM'] });
  controlled.on('completed', (j, result) => {
    const n: number = result;
    void [j.id, n];
  });
  controlled.on('failed', (j, e) => void [j.id, e.failureCode, e.willRetry, e.message]);
  controlled.on('progress', (j, value) => void [j.attemptsMade, value]);
  controlled.on('stalled', (jobId, to) => {
    const where: 'wait' | 'failed' = to;
    void [jobId, where];
  });
  controlled.on('error', (e: Error) => void e.message);
  controlled.once('closed', () => undefined);
  const outcome: CancelOutcome = await q.cancel(id, 'not needed');
  try {
    const r: number = await q.wait<number>(id, { timeout: 5_000 });
    void r;
  } catch (e) {
    if (e instanceof HandlerFailed) void [e.failureCode, e.message, e.stack, e.failure?.code];
    else if (e instanceof Timeout) void e.code;
  }
  const live: WorkerInfo[] = await q.workers();
  const lang: string = live[0].language;
  const aborted: number = await controlled.abort();
  void [outcome, lang, aborted];
  await q.add('x', {}, { removeOnComplete: { count: 100 }, removeOnFail: 5 });
  // Fair groups: settings (a null limit lifts; no group: every group's default) and the view.
  await q.setGroupWeight('tenant-a', 3);
  await q.setGroupConcurrency(2, 'tenant-a');
  await q.setGroupConcurrency(null);
  await q.setGroupMaxWaiting(1_000, 'tenant-a');
  await q.setGroupMaxWaiting(null, null);
  await q.pauseGroup('tenant-b');
  await q.resumeGroup('tenant-b');
  const groups: GroupInfo[] = await q.groups();
  const page2: GroupInfo[] = await q.groups(100, 100);
  const g0 = groups[0];
  const gName: string = g0.name;
  const gCounts: number = g0.waiting + g0.running + g0.weight;
  const gCap: number | null = g0.concurrency ?? g0.maxWaiting;
  const gPaused: boolean = g0.paused;
  void [page2, gName, gCounts, gCap, gPaused];
  try {
    await q.add('x', {}, { group: 'tenant-a' });
  } catch (e) {
    if (e instanceof GroupFull) {
      const code: 'group_full' = e.code;
      void code;
    }
  }
  // @ts-expect-error a group weight is a number
  await q.setGroupWeight('tenant-a', '3');
  // @ts-expect-error a caps' limit comes first (the group second)
  await q.setGroupConcurrency('tenant-a', 2);
  // @ts-expect-error GroupInfo's caps are number | null
  const wrongCap: string = g0.maxWaiting;
  void wrongCap;
  // @ts-expect-error no such worker event
  controlled.on('exploded', () => undefined);
  // @ts-expect-error a cancel reason is a string
  await q.cancel(id, 42);

  try {
    await q.get('forged');
  } catch (e) {
    if (e instanceof InvalidJobId) {
      const code: 'invalid_job_id' = e.code;
      void code;
    } else if (e instanceof EmqError) {
      const code: ErrorCode = e.code;
      void code;
    }
  }
  const codes: ErrorCode[] = errorCodes;

  // @ts-expect-error a job id is branded: a plain string is not one
  const forged: JobId = 'j070qsbhew0807dc';
  // @ts-expect-error delay is milliseconds, a number
  await q.add('x', {}, { delay: 'soon' });
  // @ts-expect-error backoff type is fixed or exponential
  await q.add('x', {}, { backoff: { type: 'linear' } });
  // @ts-expect-error a priority is a number
  await q.changePriority(id, 'high');
  // @ts-expect-error clean takes a finished state only
  await q.clean('active');
  // @ts-expect-error the handler receives an ActiveJob of the worker's data type
  new Worker<Email>(q, (j) => j.data.missing.length);

  void [qc, qt, fixed, waiting, paused, page, removed, created, schedulers, flow, given, done, codes, forged, reranked];
  await q.close();
}
