// pg-boss's own code, asked for its SQL (bench/peers.py runs this; not part of the extension).
//
//   node bench/peers/pgboss.mjs DIR schema
//       prints getConstructionPlans('pgboss'): the schema pg-boss installs itself
//   node bench/peers/pgboss.mjs DIR capture QUEUE BATCHES
//       against the database in PGHOST/PGPORT/PGUSER/PGDATABASE (schema already installed):
//       starts a client (no maintenance, no cron), creates QUEUE with the defaults, inserts a
//       few jobs, then for each batch size in BATCHES (comma-separated) calls fetch(QUEUE,
//       { batchSize }) and complete(QUEUE, jobs) exactly as a worker does, recording every
//       statement the client sends and its parameters; checks that the recorded fetch and
//       complete are what plans.fetchNextJob / plans.completeJobs build, and prints JSON.
//
// DIR is the folder `npm install pg-boss@VERSION` ran in (a cache under target/).
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [dir, mode, queue, batchesArg] = process.argv.slice(2);
const distUrl = file => pathToFileURL(path.join(dir, 'node_modules', 'pg-boss', 'dist', file)).href;
const pgboss = await import(distUrl('index.js'));
const plans = await import(distUrl('plans.js'));
const SCHEMA = 'pgboss';

if (mode === 'schema') {
  process.stdout.write(pgboss.getConstructionPlans(SCHEMA));
  process.exit(0);
}
if (mode !== 'capture') {
  console.error('usage: pgboss.mjs DIR schema | DIR capture QUEUE BATCHES');
  process.exit(2);
}

const batches = batchesArg.split(',').map(Number);
const boss = new pgboss.PgBoss({
  host: process.env.PGHOST,
  port: Number(process.env.PGPORT),
  user: process.env.PGUSER,
  database: process.env.PGDATABASE,
  schema: SCHEMA,
  migrate: false,        // the schema is installed from getConstructionPlans; check its version only
  supervise: false,
  schedule: false,
  max: 1
});
boss.on('error', err => { console.error('pg-boss error:', err); process.exitCode = 1; });
// Every statement the client sends goes through its db's executeSql: record them.
const db = boss.getDb();
const calls = [];
const executeSql = db.executeSql.bind(db);
db.executeSql = (text, values, ...rest) => {
  calls.push({ text, values: values ?? [] });
  return executeSql(text, values, ...rest);
};

await boss.start();
await boss.createQueue(queue);
const queueRow = await boss.getQueue(queue);
const out = { version: null, queue: { name: queue, table: queueRow.table, policy: queueRow.policy },
              insert: null, fetch: {}, complete: {} };
out.version = (await db.executeSql(`SELECT version FROM ${SCHEMA}.version`)).rows[0].version;

const total = batches.reduce((a, b) => a + b, 0);
let mark = calls.length;
await boss.insert(queue, Array.from({ length: total }, (_, i) => ({ data: { i } })));
const inserts = calls.slice(mark).filter(c => /INSERT INTO/i.test(c.text));
if (inserts.length !== 1) throw new Error(`expected one INSERT from insert(), got ${inserts.length}`);
out.insert = { text: inserts[0].text, values: inserts[0].values };

for (const n of batches) {
  mark = calls.length;
  const jobs = await boss.fetch(queue, { batchSize: n });
  const fetches = calls.slice(mark);
  if (fetches.length !== 1) throw new Error(`fetch sent ${fetches.length} statements`);
  if (jobs.length !== n) throw new Error(`fetch(${n}) returned ${jobs.length} jobs`);
  const built = plans.fetchNextJob({ schema: SCHEMA, table: queueRow.table, name: queue,
                                     policy: queueRow.policy, limit: n,
                                     // the default config: openTelemetry.enabled unless set to false
                                     includeTraceContext: true });
  if (built.text !== fetches[0].text) throw new Error('fetch: recorded statement differs from plans.fetchNextJob');
  out.fetch[n] = { text: fetches[0].text, values: fetches[0].values, jobs: jobs.length };

  mark = calls.length;
  // a worker's settle: complete() with the fetched jobs (id + retryCount), no output
  const res = await boss.complete(queue, jobs);
  const completes = calls.slice(mark);
  if (completes.length !== 1) throw new Error(`complete sent ${completes.length} statements`);
  if (res.affected !== n) throw new Error(`complete affected ${res.affected} of ${n}`);
  const fenced = plans.completeJobs(SCHEMA, queueRow.table, undefined, true);
  if (fenced !== completes[0].text) throw new Error('complete: recorded statement differs from plans.completeJobs');
  out.complete[n] = { text: completes[0].text, values: completes[0].values };
}
await boss.stop({ graceful: false, timeout: 1000 });
process.stdout.write(JSON.stringify(out, null, 1) + '\n');
