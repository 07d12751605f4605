// The Node.js package's producer against the real extension, run by tests/workers/check.py
// from a project where `npm install` put the packed package (so that "sendjobs" is the
// installed one, as ESM here; check.py requires it as CommonJS too). DATABASE_URL names a
// fresh database with the extension and a table payments (id text, amount int).
//
// A job enqueued in a transaction that rolls back is gone with the business row; one
// that commits is there with it (a Client, and a PoolClient); an array payload stays a
// JSON array; many jobs keep their order and values, due times (a time, a delay on the
// database's clock); bad input adds none, with its SQLSTATE; the schema is named when asked.
// And the worker finalizes results that end together in one call: 200 jobs of a handler
// that returns at once, batch 100, a window of a second (long, so that no machine is too
// slow for it) take at most 10 calls of sendjobs_finalize_batch (check.py sets
// track_functions), not 200.

import assert from "node:assert/strict";
import { createRequire } from "node:module";
import pg from "pg";
import { enqueue, enqueueMany, SENT, Worker } from "sendjobs";

const url = process.env.DATABASE_URL;
let checks = 0;
const check = (condition, what) => {
  assert.ok(condition, what);
  checks++;
};
assert.ok(!createRequire(import.meta.url).resolve("sendjobs").includes("/workers/node/"), "the installed package");

const db = new pg.Client(url);
await db.connect();
const jobs = async (where = "true") =>
  (await db.query(`SELECT id::text, queue, payload, transaction_id, idempotency_key, max_attempts, ordering_key,
                          priority, extract(epoch FROM next_attempt_at - now())::float8 AS due_in
                     FROM send_jobs WHERE ${where} ORDER BY id`)).rows;

// A Client in a transaction: rolled back, then committed.
const client = new pg.Client(url);
await client.connect();
await client.query("BEGIN");
await client.query("INSERT INTO payments VALUES ('p-1', 10)");
await enqueue(client, { payload: { to: "acme" }, queue: "acme", transactionId: "p-1" });
await client.query("ROLLBACK");
check((await jobs()).length === 0, "a rolled-back transaction leaves no job");
await client.query("BEGIN");
await client.query("INSERT INTO payments VALUES ('p-1', 10)");
const first = await enqueue(client, { payload: [1, 2, 3], queue: "acme", transactionId: "p-1",
                                      idempotencyKey: "p-1/notify", maxAttempts: 3, orderingKey: "acct-1", priority: 5 });
const again = await enqueue(client, { payload: {}, idempotencyKey: "p-1/notify" });
await client.query("COMMIT");
await client.end();
check(typeof first === "string" && again === first, "a repeated key gives the first job, as a string");
const [one] = await jobs();
check(JSON.stringify(one.payload) === "[1,2,3]", "an array payload stays a JSON array");
check(one.queue === "acme" && one.transaction_id === "p-1" && one.max_attempts === 3 && one.ordering_key === "acct-1"
      && one.priority === 5, "every column as given");

// A PoolClient in a transaction, many jobs.
const pool = new pg.Pool({ connectionString: url, max: 2 });
const pooled = await pool.connect();
await pooled.query("BEGIN");
const soon = new Date(Date.now() + 3600 * 1000);
const ids = await enqueueMany(pooled, [
  { payload: { n: 1 }, queue: "a", orderingKey: "line" },
  { payload: { n: 2 }, queue: "a", orderingKey: "line", runAt: soon, maxAttempts: 2 },
  { payload: { n: 3 }, queue: "b", runAfterSeconds: 600 },
]);
await pooled.query("COMMIT");
pooled.release();
check(ids.length === 3 && ids.every((id, i) => i === 0 || BigInt(ids[i - 1]) < BigInt(id)), "ids in order");
const rows = await jobs(`id = ANY('{${ids.join(",")}}'::int8[])`);
check(rows.map((r) => r.payload.n).join() === "1,2,3" && rows.map((r) => r.queue).join() === "a,a,b", "payloads, queues");
check(rows[0].due_in <= 0 && rows[1].due_in > 3590 && rows[2].due_in > 590 && rows[2].due_in <= 600,
      `due times ${rows.map((r) => r.due_in)}`);
check(rows[1].max_attempts === 2 && rows[0].ordering_key === "line", "budgets and keys");
check((await enqueueMany(pool, [])).length === 0, "none: nothing");

// Bad input: its SQLSTATE, nothing added; the schema named.
const before = (await jobs()).length;
await assert.rejects(enqueueMany(pool, [{ payload: {} }, { payload: {}, priority: 61 }]), (e) => e.code === "22023");
check((await jobs()).length === before, "a bad job adds none");
await db.query('CREATE SCHEMA "job queue"');
await assert.rejects(enqueue(pool, { payload: {} }, { schema: "job queue" }), (e) => e.code === "42883");
check(true, "the schema is the one named");

await enqueueMany(pool, Array.from({ length: 200 }, (_, n) => ({ payload: { n }, queue: "batched" })));
const worker = new Worker({ connectionString: url }, async () => SENT,
                          { queue: "batched", batch: 100, pollSeconds: 0.2, listen: false, finishWindowMs: 1000 });
const running = worker.run({ handleSignals: false });
while (worker.counters.sent < 200) await new Promise((resolve) => setTimeout(resolve, 50));
worker.stop();
const counters = await running;
let calls = null;
for (let i = 0; i < 100 && !calls; i++) { // the worker's backends report their calls as they exit
  calls = Number((await db.query(`SELECT sum(calls) AS calls FROM pg_stat_user_functions
                                   WHERE funcname = 'sendjobs_finalize_batch'`)).rows[0].calls) || null;
  if (!calls) await new Promise((resolve) => setTimeout(resolve, 100));
}
check(counters.sent === 200 && calls !== null && calls <= 10, `200 results finalized in ${calls} calls`);
await pool.end();
await db.end();
console.log(`   node client: ${checks} checks of the installed package's producer and worker passed`);
