// The worker: claims jobs in batches, runs your handler on each under a timeout,
// heartbeats every half lease while a handler runs (and aborts it if the job is lost),
// finalizes each job as soon as its handler settles (results that end within a few
// milliseconds of each other in one call), wakes on NOTIFY sendjobs_wakeup,
// reconnects after a lost connection, and on stop() (or SIGTERM or SIGINT) stops claiming,
// lets the running handlers finish, finalizes them and resolves run() with its counters.
// The next batch is claimed once the whole batch is finalized. If the database is away at
// the stop, or stops answering, no call outlives a lease since the stop: a finalize is
// then given up (its job comes back after its lease).
//
// What node-postgres needs told, and is told here:
//  * every parameter goes as text, and Postgres reads a bare number as an interval of
//    seconds: a lease of 5000 meant as milliseconds would be 83 minutes. The lease goes
//    as seconds through make_interval(secs => $n), so its unit is in the SQL;
//  * bigint columns (id, claim_generation) come back as strings, which is right: an id
//    above 2^53 would lose digits as a number. They go back as they came;
//  * the statements have no name: unnamed statements work behind PgBouncer in
//    transaction mode, named ones do not;
//  * nothing is SET on the connection (a SET leaks to the next client of a pooled
//    connection): the lease goes with every call;
//  * a client whose connection drops while idle emits 'error': without a listener the
//    process would crash;
//  * it connects to one host, and knows no target_session_attrs: the worker splits a
//    list of hosts itself (eachHost) and passes over a server that takes no writes, as
//    libpq's target_session_attrs=read-write does; TCP keepalives are on unless told
//    otherwise (it has no tcp_user_timeout: the wake-up connection's check does that work).

import { Client, ClientConfig } from "pg";

/** What a handler returns: sent, failed (for good) or retry, with the error. */
export type Outcome = { outcome: "sent" | "failed" | "retry"; error: string | null };
export const SENT: Outcome = { outcome: "sent", error: null };
/** Refused for good: the job fails now. */
export const failed = (error: string): Outcome => ({ outcome: "failed", error });
/** Try again after the server's backoff (failed once its attempts are used up). */
export const retry = (error: string): Outcome => ({ outcome: "retry", error });

/** A claimed job. Ids and generations are strings: a bigint can exceed 2^53. */
export type Job = {
  id: string;
  claim_generation: string;
  transaction_id: string | null;
  idempotency_key: string | null;
  payload: unknown;
};
/** Runs one job; `signal` aborts when the job is lost or its time is up. One that throws is retried. */
export type Handler = (job: Job, signal: AbortSignal) => Promise<Outcome>;

export type WorkerOptions = {
  /** The one queue to claim from; null (the default): every queue, in turn. */
  queue: string | null;
  batch: number;
  leaseSeconds: number;
  sendTimeoutSeconds: number;
  pollSeconds: number;
  /** LISTEN for wake-ups (false behind a pooler in transaction mode). */
  listen: boolean;
  /** The extension's schema. */
  schema: string;
  /** Results that end within this of the first waiting one are finalized in one call (at most
   * a batch, and never longer than a tenth of the lease). */
  finishWindowMs: number;
  /** The wake-up connection is asked `SELECT 1` this often (0: never)... */
  listenCheckSeconds: number;
  /** ...and hung up when it does not answer within this (a socket that hangs, not closes). */
  listenCheckTimeoutSeconds: number;
};

const DEFAULTS: WorkerOptions = {
  queue: null, batch: 10, leaseSeconds: 30, sendTimeoutSeconds: 60, pollSeconds: 5, listen: true, schema: "public",
  finishWindowMs: 5, listenCheckSeconds: 2, listenCheckTimeoutSeconds: 3,
};

type Finishing = { job: Job; outcome: string; error: string | null; done: () => void };

export const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
// `work`'s result, or "timeout" once `ms` have passed (the timer cleared either way).
const within = <T>(work: Promise<T>, ms: number): Promise<T | "timeout"> => {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), ms)));
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
};

/** node-postgres connects to one host: settings that name several, as libpq takes them
 * (`postgresql://user@h1:5432,h2:5433/db`, or a `host` of "h1,h2" with a `port` of
 * "5432,5433"), become one settings per host, to be tried in order. */
function eachHost(connection: ClientConfig): ClientConfig[] {
  const url = connection.connectionString?.match(/^(postgres(?:ql)?:\/\/(?:[^/?#]*@)?)([^/?#]*)(.*)$/s);
  if (url && url[2].includes(",")) {
    return url[2].split(",").map((host) => ({ ...connection, connectionString: url[1] + host + url[3] }));
  }
  if (typeof connection.host === "string" && connection.host.includes(",")) {
    const ports = String(connection.port ?? "").split(",");
    return connection.host.split(",").map((host, i) => {
      const port = Number(ports[i] ?? ports[0]);
      return { ...connection, host, port: port > 0 ? port : undefined };
    });
  }
  return [connection];
}

// A client's socket closed at once, whatever its peer does: end() waits for the server
// to close its side, which a server that stopped answering never does.
const hangUp = (client: Client) => client.connection.stream.destroy();

// A lost connection (node-postgres's own "Connection terminated" errors carry no code;
// a system error such as ECONNRESET; SQLSTATE class 08; the server ending the session;
// a server that no longer takes writes):
// the call is made again on a new connection. Any other error is the caller's, among
// them a TypeError of ours, which a retry would only repeat.
const connectionLost = (e: any) =>
  (!e?.code && e?.constructor === Error) ||
  /^E[A-Z]/.test(e?.code ?? "") || (e?.code ?? "").startsWith("08") || ["57P01", "57P02", "57P03"].includes(e?.code) ||
  // A demoted primary, or a standby, after a failover: a new connection finds the writable one.
  e?.code === "25006";

// Bad input (22), authorization (28), names and grants (42): the same claim will fail
// again. Not 42804: a claim parsed before ALTER EXTENSION ... UPDATE fails with it once.
const permanent = (e: any) => ["22", "28", "42"].includes((e?.code ?? "").slice(0, 2)) && e.code !== "42804";

export class Worker {
  counters = { claimed: 0, sent: 0, failed: 0, retried: 0, stale: 0, heartbeats: 0, wakeups: 0, limited: 0, reconnects: 0, errors: 0 };
  private client: Promise<Client> | null = null;
  // The calls of the running jobs, one at a time on the connection: node-postgres queues
  // a query sent while another runs, but that is deprecated (it warns, and pg 9 drops it).
  private calls: Promise<unknown> = Promise.resolve();
  private stopping = false;
  private stoppedAt = 0; // Date.now() at the signal
  // Called at the signal, then forgotten: the waits that end or start a deadline then.
  // A set, not a promise of the signal: each call would leave it a callback until then.
  private atStop = new Set<() => void>();
  private wake: (() => void) | null = null;
  private listener: Client | null = null; // the LISTEN connection, ended when run() ends
  private finishing: Finishing[] = []; // results waiting for the completer
  private completer: Promise<void> | null = null;
  private finishingFull: (() => void) | null = null; // ends the completer's window early
  private running = 0; // jobs claimed whose result is not known yet
  private sql: Record<"claim" | "heartbeat" | "finalize" | "limits", string>;
  private options: WorkerOptions;

  /** `connection`: node-postgres's settings (a connectionString among them). */
  constructor(
    private connection: ClientConfig,
    private send: Handler,
    given: Partial<WorkerOptions> = {},
  ) {
    const options = (this.options = { ...DEFAULTS, ...given });
    if (!(options.leaseSeconds > 0)) throw new RangeError("leaseSeconds must be a positive number of seconds");
    const s = ident(options.schema);
    const lease = "pg_catalog.make_interval(secs => $LEASE::float8)";
    this.sql = {
      claim: `SELECT id, claim_generation, transaction_id, idempotency_key, payload
                FROM ${s}.sendjobs_claim($1::int4, ${lease.replace("$LEASE", "$2")}, $3::text)`,
      heartbeat: `SELECT ${s}.sendjobs_heartbeat($1::int8, $2::int8, ${lease.replace("$LEASE", "$3")}) AS answer`,
      // After a short claim of its queue: limited (and until when) or empty.
      limits: `SELECT limited, extract(epoch FROM retry_after)::float8 AS wait
                 FROM ${s}.sendjobs_queue_limits($1::text)`,
      // Results of one outcome (and error) together, answered in their order, each with its
      // job's status: a retry on the last attempt is applied and fails the job, and counts
      // as failed (docs/reference.md).
      finalize: `SELECT result AS answer, status
                   FROM ${s}.sendjobs_finalize_batch($1::int8[], $2::int8[], $3::text, $4::text)`,
    };
  }

  // A connection to the first host of the settings that takes writes: after a failover
  // the new primary, not a demoted one or a standby (libpq's target_session_attrs=read-write
  // asks the same question). When none does, the last host's error.
  private async connect(): Promise<Client> {
    let refused: unknown = new Error("no host to connect to");
    for (const settings of eachHost(this.connection)) {
      const client = new Client({ keepAlive: true, keepAliveInitialDelayMillis: 5000, ...settings });
      client.on("error", () => {}); // a drop while idle: the next call notices and reconnects
      // The server's WARNINGs (the terminal guard refusing a stamp) would go unseen.
      client.on("notice", (n) => console.error(`sendjobs-worker: server ${n.severity}: ${n.message}`));
      try {
        await client.connect();
      } catch (e) {
        refused = e;
        continue;
      }
      try {
        const { rows } = await client.query("SHOW transaction_read_only");
        if (rows[0]?.transaction_read_only === "off") return client;
        refused = new Error(`${client.host}:${client.port} takes no writes (transaction_read_only is on)`);
      } catch (e) {
        refused = e;
      }
      hangUp(client);
    }
    throw refused;
  }

  // One statement; after a lost connection, again on a new one. Every call but the
  // claim is fenced by id and generation, so making it twice changes nothing the first
  // did not; a claim whose answer was lost leaves its jobs to their lease (an attempt each).
  // Calls share one connection, opened once however many find it gone (one promise).
  // Once the worker is stopping, a claim is not made again, and no call outlives a lease
  // since the signal: its job's lease has expired by then anyway, and a database that is
  // away, or stops answering, must not keep the worker.
  private async call(text: string, values: unknown[], claim = false): Promise<any[]> {
    let delay = 100;
    for (;;) {
      const pending = (this.client ??= this.connect());
      try {
        const client = await this.untilDeadline(pending);
        const result = this.calls.then(() => client.query(text, values));
        this.calls = result.catch(() => {});
        return (await this.untilDeadline(result)).rows;
      } catch (e: any) {
        if (!connectionLost(e)) throw e;
        if (this.client === pending) {
          // Not replaced by another call yet: this one closes it and counts. The queue of
          // calls starts again with the new connection (one given up may never settle).
          this.client = null;
          this.calls = Promise.resolve();
          this.counters.reconnects++;
          pending.then((c) => c.end()).catch(() => {});
        }
        if (this.stopping && (claim || Date.now() >= this.deadline())) throw e;
        console.error(`sendjobs-worker: connection lost (${e.message}); again in ${delay} ms`);
        if (this.stopping) await sleep(Math.min(delay, this.deadline() - Date.now()));
        else {
          await this.pause(delay); // a signal ends the wait...
          if (claim && this.stopping) throw e; // ...and a claim with it
        }
        delay = Math.min(delay * 2, 5000);
      }
    }
  }

  // Date.now() after which a stopping worker waits for no call.
  private deadline() {
    return this.stoppedAt + this.options.leaseSeconds * 1000;
  }

  // `work`, but once the worker is stopping only until its deadline; then it is given up
  // as a lost connection (an Error without a code): a server that stopped answering.
  private untilDeadline<T>(work: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    let arm = () => {};
    const givenUp = new Promise<never>((_, reject) => {
      arm = () => {
        timer = setTimeout(() => reject(new Error("no answer within a lease of the stop: given up")),
                           Math.max(0, this.deadline() - Date.now()));
      };
    });
    if (this.stopping) arm();
    else this.atStop.add(arm);
    return Promise.race([work, givenUp]).finally(() => {
      clearTimeout(timer);
      this.atStop.delete(arm);
    });
  }

  // A wait of `ms` that the signal ends.
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.atStop.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.atStop.add(done);
    });
  }

  // A connection of its own for LISTEN: notifications arrive on it between calls. Once
  // it is lost the worker claims at once, then at its poll interval, while this connects
  // again.
  private async listenForWakeups() {
    while (!this.stopping) {
      try {
        const listener = (this.listener = await this.connect());
        const closed = new Promise<"closed">((resolve) => listener.once("end", () => resolve("closed")));
        if (this.stopping) {
          await listener.end(); // stopped while it connected
          break;
        }
        listener.on("notification", (note) => {
          if (this.options.queue === null || note.payload === this.options.queue) {
            this.counters.wakeups++;
            this.wake?.();
          }
        });
        await listener.query("LISTEN sendjobs_wakeup");
        this.wake?.(); // anything enqueued while we were not listening
        await this.checkListening(listener, closed);
      } catch (e: any) {
        console.error(`sendjobs-worker: wake-up connection: ${e.message}`);
      }
      if (this.stopping) break;
      console.error("sendjobs-worker: wake-up connection lost; polling until it is back");
      this.wake?.(); // a wake-up may be lost: claim now
      await this.pause(1000);
    }
  }

  // Until `listener` closes: every listenCheckSeconds a `SELECT 1`, and a connection that
  // does not answer it within listenCheckTimeoutSeconds (a socket that hangs rather than
  // closes: a partition, a frozen server) is hung up.
  private async checkListening(listener: Client, closed: Promise<"closed">) {
    const { listenCheckSeconds: every, listenCheckTimeoutSeconds: timeout } = this.options;
    if (!(every > 0)) return void (await closed);
    while ((await within(closed, every * 1000)) === "timeout" && !this.stopping) {
      const check = listener.query("SELECT 1").then(() => "answered" as const, () => "failed" as const);
      const answer = await within(check, timeout * 1000);
      if (answer === "failed") return void (await closed);
      if (answer === "timeout") {
        console.error(`sendjobs-worker: wake-up connection: no answer to a check within ${timeout} s: hung up`);
        hangUp(listener);
        return;
      }
    }
  }

  // One job: its send under a timeout and heartbeats, then at once its finalize (a result
  // that waited for the rest of the batch could outlive its lease).
  private async runOne(job: Job) {
    const abort = new AbortController();
    let timedOut = false;
    const deadline = setTimeout(() => ((timedOut = true), abort.abort()), this.options.sendTimeoutSeconds * 1000);
    const sending = this.send(job, abort.signal).catch(
      (e: any): Outcome => ({ outcome: "retry", error: `send threw ${e}` }),
    );
    let result: Outcome | "beat";
    for (;;) {
      let timer: NodeJS.Timeout | undefined;
      const beat = new Promise<"beat">((resolve) => (timer = setTimeout(() => resolve("beat"), (this.options.leaseSeconds * 1000) / 2)));
      result = await Promise.race([sending, beat]);
      clearTimeout(timer);
      if (result !== "beat") break;
      let answer: string;
      try {
        [{ answer }] = await this.call(this.sql.heartbeat, [job.id, job.claim_generation, this.options.leaseSeconds]);
      } catch (e: any) {
        // Not a lost connection: try again at the next beat.
        console.error(`sendjobs-worker: heartbeat of job ${job.id} failed: ${e.message}`);
        this.counters.errors++;
        continue;
      }
      if (answer === "stale") {
        // The lease expired and another worker holds the job, or it was cancelled.
        clearTimeout(deadline);
        abort.abort();
        this.counters.stale++;
        if (--this.running === 0) this.finishingFull?.();
        return;
      }
      this.counters.heartbeats++;
    }
    clearTimeout(deadline);
    const { outcome, error } = timedOut
      ? { outcome: "retry", error: `send timed out after ${this.options.sendTimeoutSeconds} s` }
      : result;
    this.running--;
    await this.finalize(job, outcome, error);
  }

  // Hands a result to the completer and waits until it is finalized (or given up).
  private finalize(job: Job, outcome: string, error: string | null): Promise<void> {
    return new Promise((done) => {
      this.finishing.push({ job, outcome, error, done });
      if (this.finishing.length >= this.options.batch || this.running === 0) this.finishingFull?.();
      this.completer ??= this.complete();
    });
  }

  // Finalizes what is waiting, one call per outcome, once the window since the first result
  // has passed, a batch waits or no handler runs (no result can come sooner than the next
  // claim, which waits for these); again while results came in meanwhile.
  private async complete() {
    const window = Math.min(this.options.finishWindowMs, (this.options.leaseSeconds * 1000) / 10);
    while (this.finishing.length > 0) {
      if (this.finishing.length < this.options.batch && this.running > 0) {
        let timer: NodeJS.Timeout | undefined;
        await new Promise<void>((resolve) => {
          this.finishingFull = resolve;
          timer = setTimeout(resolve, window);
        });
        clearTimeout(timer);
        this.finishingFull = null;
      }
      const waiting = this.finishing.splice(0, this.options.batch);
      const groups = new Map<string, Finishing[]>();
      for (const item of waiting) {
        const key = JSON.stringify([item.outcome, item.error]);
        groups.set(key, [...(groups.get(key) ?? []), item]);
      }
      for (const items of groups.values()) await this.finalizeTogether(items);
    }
    // In the same turn as the check above: a result that comes after starts another.
    this.completer = null;
  }

  private async finalizeTogether(items: Finishing[]): Promise<void> {
    const { outcome, error } = items[0];
    let rows: any[];
    try {
      rows = await this.call(this.sql.finalize, [items.map((i) => i.job.id), items.map((i) => i.job.claim_generation),
                                                 outcome, error]);
    } catch (e: any) {
      if (items.length > 1) {
        // One job's refusal must not hold the others: one by one.
        console.error(`sendjobs-worker: finalize of ${items.length} jobs failed, one by one now: ${e.message}`);
        for (const item of items) await this.finalizeTogether([item]);
        return;
      }
      // The guard refusing the stamp (23514 in error mode), a conflict: the job stays in
      // flight and comes back after its lease (it gives up after its attempts).
      console.error(`sendjobs-worker: finalize of job ${items[0].job.id} failed: ${e.message}`);
      this.counters.errors++;
      items[0].done();
      return;
    }
    items.forEach((item, i) => {
      // Applied (a repeat of a call whose answer was lost too): what the job became.
      const { answer, status } = rows[i];
      if (answer !== "applied") this.counters.stale++;
      else if (status === "sent") this.counters.sent++;
      else if (status === "failed") this.counters.failed++;
      else this.counters.retried++;
      item.done();
    });
  }

  // How long to wait after a claim of `got` jobs, short of the batch (a wake-up ends it
  // sooner): the poll interval, or less when the queue's rate limits it and its next token
  // comes sooner (sendjobs_queue_limits' retry_after). A pause or a reached cap waits for
  // the poll or a wake-up (a resume sends one). A queue with flow control that no longer
  // limits is claimed again at once while the claims take jobs (a token came since: a
  // rate-limited queue is claimed at its rate, however slow the round trip); after a claim
  // that took none, once more, so an empty queue is not claimed in a loop.
  private claimedEmpty = false; // the last claim, made again at once, took nothing
  private async idleWait(got: number): Promise<number> {
    const { queue, pollSeconds } = this.options;
    if (queue === null) return pollSeconds;
    let rows: any[];
    try {
      rows = await this.call(this.sql.limits, [queue], true); // given up at a stop
    } catch (e: any) {
      console.error(`sendjobs-worker: queue limits of ${queue} unknown (${e.message})`);
      return pollSeconds;
    }
    if (rows.length === 0) return pollSeconds; // no flow control: the queue is empty
    if (rows[0].limited === null) {
      // Empty, or a token came back since the claim. A claim that took jobs is made again;
      // one that took none is made again once (the token may have come back after it found
      // none), and the queue is empty if that one takes none either.
      const claimAgain = got > 0 || !this.claimedEmpty;
      this.claimedEmpty = claimAgain && got === 0;
      return claimAgain ? 0 : pollSeconds;
    }
    this.claimedEmpty = false;
    this.counters.limited++;
    return rows[0].wait === null ? pollSeconds : Math.min(pollSeconds, Math.max(0.005, rows[0].wait));
  }

  /** No more claims: the running handlers finish and are finalized, then run() resolves. */
  stop() {
    if (!this.stopping) this.stoppedAt = Date.now();
    this.stopping = true;
    this.wake?.();
    for (const f of [...this.atStop]) f();
  }

  /** Runs until stop() (or, with handleSignals, SIGTERM or SIGINT); resolves with the counters. */
  async run({ handleSignals = true }: { handleSignals?: boolean } = {}) {
    const stop = () => this.stop();
    if (handleSignals) {
      process.on("SIGTERM", stop);
      process.on("SIGINT", stop);
    }
    this.client = Promise.resolve(await this.connect()); // the first one fails fast (a wrong password)
    if (this.options.listen) void this.listenForWakeups();
    const { queue, batch, leaseSeconds, pollSeconds } = this.options;
    while (!this.stopping) {
      let woken = false;
      const idle = new Promise<void>((resolve) => (this.wake = () => ((woken = true), resolve())));
      let jobs: Job[] = [];
      try {
        jobs = await this.call(this.sql.claim, [batch, leaseSeconds, queue], true);
      } catch (e: any) {
        if (this.stopping) break; // first: a refused reconnect must not fail a clean stop
        if (permanent(e)) throw e; // a bad argument, a missing grant: waiting will not mend it
        console.error(`sendjobs-worker: claim failed (${e.message}); again in ${pollSeconds} s`);
        this.counters.errors++;
      }
      this.counters.claimed += jobs.length;
      this.running += jobs.length;
      if (jobs.length > 0) this.claimedEmpty = false;
      // A signal now stops the claims, not these sends: they finish, and are finalized.
      await Promise.all(jobs.map((job) => this.runOne(job)));
      if (jobs.length < batch && !woken && !this.stopping) {
        let timer: NodeJS.Timeout | undefined;
        const wait = await this.idleWait(jobs.length);
        await Promise.race([idle, new Promise((resolve) => (timer = setTimeout(resolve, wait * 1000)))]);
        clearTimeout(timer);
      }
    }
    this.wake = null;
    if (handleSignals) {
      process.off("SIGTERM", stop);
      process.off("SIGINT", stop);
    }
    // Nothing left open: a program whose worker stopped exits by itself.
    const listener = this.listener;
    if (listener && (await within(listener.end().catch(() => {}), 1000)) === "timeout") hangUp(listener);
    await this.client?.then((c) => c.end()).catch(() => {});
    return this.counters;
  }
}
