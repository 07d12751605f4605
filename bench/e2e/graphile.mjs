// bench/e2e.sh's driver of graphile-worker (npm, pinned in bench/e2e.sh): setup (its
// migrations), load N (addJobs), drain N (run with concurrency 10, until its task ran N),
// steady RATE SECONDS (it LISTENs for new jobs; addJob per job). The task does nothing.
import { done, need, nowMs, sleep, stream, url } from "./common.mjs";

const { run, makeWorkerUtils } = need("graphile-worker");
const [command, ...args] = process.argv.slice(2);
const utils = await makeWorkerUtils({ connectionString: url });
const runner = (task) =>
  run({ connectionString: url, concurrency: 10, maxPoolSize: 11, noHandleSignals: true, pollInterval: 1000,
        taskList: { noop: async (payload) => task(payload) } });

if (command === "setup") {
  await utils.migrate();
  await utils.release();
  done({ setup: true });
} else if (command === "load") {
  const n = Number(args[0]);
  for (let lo = 0; lo < n; lo += 10000) {
    const jobs = [];
    for (let i = lo; i < Math.min(n, lo + 10000); i++) jobs.push({ identifier: "noop", payload: { n: i } });
    await utils.addJobs(jobs);
  }
  await utils.release();
  done({ loaded: n });
} else if (command === "drain") {
  const n = Number(args[0]);
  let ran = 0;
  const started = performance.now();
  const worker = await runner(() => ran++);
  while (ran < n) await sleep(5);
  const seconds = (performance.now() - started) / 1000;
  await worker.stop();
  await utils.release();
  done({ jobs: n, seconds });
} else {
  const seen = [];
  const worker = await runner((payload) => seen.push(nowMs() - payload.t));
  const jobs = await stream(Number(args[0]), Number(args[1]), (t) => utils.addJob("noop", { t }), seen);
  await worker.stop();
  await utils.release();
  done({ jobs, latencies_ms: seen });
}
