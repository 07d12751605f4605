// bench/e2e.sh's driver of the sendjobs Node.js package (packed and installed into the
// bench's npm cache): load N (enqueueMany), drain N (the Worker until N are finalized),
// steady RATE SECONDS. The handler does nothing.
import { done, need, nowMs, sleep, stream, url } from "./common.mjs";

const pg = need("pg");
const { enqueue, enqueueMany, SENT, Worker } = need("sendjobs");
const [command, ...args] = process.argv.slice(2);
const worker = (handler) =>
  new Worker({ connectionString: url }, handler, { queue: "bench", batch: 100, leaseSeconds: 30, pollSeconds: 1 });
const db = new pg.Client(url);
await db.connect();

if (command === "load") {
  const n = Number(args[0]);
  for (let lo = 0; lo < n; lo += 10000) {
    const jobs = [];
    for (let i = lo; i < Math.min(n, lo + 10000); i++) jobs.push({ payload: { n: i }, queue: "bench" });
    await enqueueMany(db, jobs);
  }
  done({ loaded: n });
} else if (command === "drain") {
  const n = Number(args[0]);
  const w = worker(async () => SENT);
  const started = performance.now();
  const run = w.run({ handleSignals: false });
  while (w.counters.sent < n) await sleep(5);
  const seconds = (performance.now() - started) / 1000;
  w.stop();
  await run;
  done({ jobs: n, seconds });
} else {
  const seen = [];
  const w = worker(async (job) => (seen.push(nowMs() - job.payload.t), SENT));
  const run = w.run({ handleSignals: false });
  const jobs = await stream(Number(args[0]), Number(args[1]), (t) => enqueue(db, { payload: { t }, queue: "bench" }), seen);
  w.stop();
  await run;
  done({ jobs, latencies_ms: seen });
}
