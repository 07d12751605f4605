// bench/e2e.sh's driver of pg-boss (npm, pinned in bench/e2e.sh): setup (its schema and a
// queue with NOTIFY on), load N (insert), drain N (work with batchSize 100 and
// burstWhenBatchFull, until its handler ran N), steady RATE SECONDS (LISTEN/NOTIFY on;
// send per job). The handler does nothing.
import { done, load, nowMs, sleep, stream, url } from "./common.mjs";

const { PgBoss } = await load("pg-boss");
const [command, ...args] = process.argv.slice(2);
const boss = new PgBoss({ connectionString: url, useListenNotify: true, supervise: false, schedule: false });
boss.on("error", (e) => console.error("pg-boss:", e.message));
await boss.start();
const work = (handler) =>
  boss.work("bench", { batchSize: 100, burstWhenBatchFull: true, pollingIntervalSeconds: 1 }, async (jobs) => {
    for (const job of jobs) handler(job);
  });

if (command === "setup") {
  await boss.createQueue("bench", { notify: true });
  await boss.stop({ graceful: false });
  done({ setup: true });
} else if (command === "load") {
  const n = Number(args[0]);
  for (let lo = 0; lo < n; lo += 10000) {
    const jobs = [];
    for (let i = lo; i < Math.min(n, lo + 10000); i++) jobs.push({ data: { n: i } });
    await boss.insert("bench", jobs);
  }
  await boss.stop({ graceful: false });
  done({ loaded: n });
} else if (command === "drain") {
  const n = Number(args[0]);
  let ran = 0;
  const started = performance.now();
  await work(() => ran++);
  while (ran < n) await sleep(5);
  const seconds = (performance.now() - started) / 1000;
  await boss.stop({ graceful: true, wait: true });
  done({ jobs: n, seconds });
} else {
  const seen = [];
  await work((job) => seen.push(nowMs() - job.data.t));
  const jobs = await stream(Number(args[0]), Number(args[1]), (t) => boss.send("bench", { t }), seen);
  await boss.stop({ graceful: true, wait: true });
  done({ jobs, latencies_ms: seen });
}
