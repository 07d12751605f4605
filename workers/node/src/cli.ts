#!/usr/bin/env node
// sendjobs-worker: the worker as a program, sending each job to a partner over HTTP
// (fetch) under a timeout. On SIGTERM or SIGINT it stops as Worker.stop() does and
// prints its counters as one JSON line.
//
//   DATABASE_URL=postgres://app_worker@/app?host=/var/run/postgresql \
//   PARTNER_URL=http://127.0.0.1:8080/send QUEUE=acme LEASE_SECONDS=30 sendjobs-worker
//
// Settings (environment): DATABASE_URL, PARTNER_URL, QUEUE (default: any), BATCH (10),
// LEASE_SECONDS (30), SEND_TIMEOUT_SECONDS (60), CONNECT_TIMEOUT_SECONDS (10),
// POLL_SECONDS (5), LISTEN (1; 0 behind a pooler in transaction mode, which does not keep
// a LISTEN), SCHEMA (public: the extension's schema), WORKER_NAME (the connection's
// application_name), LISTEN_CHECK_SECONDS (2; 0: none) and LISTEN_CHECK_TIMEOUT_SECONDS (3):
// how often the wake-up connection is checked, and how long its answer may take.
// DATABASE_URL may list several hosts (postgresql://user@h1:5432,h2:5432/db): the first
// that takes writes is used.

import { Handler, Worker } from "./worker.js";

// A send to a partner's HTTP endpoint: 2xx is sent, 4xx but 408 and 429 refused for
// good (failed), anything else retried. The job id is the idempotency key unless the job has its own:
// a job is sent again only under a new generation, after its lease expired.
export function httpSend(partnerUrl: string, workerName: string): Handler {
  return async (job, signal) => {
    try {
      const response = await fetch(partnerUrl, {
        method: "POST",
        signal,
        headers: {
          "Content-Type": "application/json",
          "X-Worker": workerName,
          "Idempotency-Key": job.idempotency_key ?? `sendjobs-${job.id}`,
        },
        body: JSON.stringify({
          job_id: job.id,
          claim_generation: job.claim_generation,
          transaction_id: job.transaction_id,
          payload: job.payload,
        }),
      });
      if (response.ok) return { outcome: "sent", error: null };
      const error = `partner answered HTTP ${response.status}`;
      // 4xx is refused for good, but for timeouts and throttling.
      const refused = response.status >= 400 && response.status < 500 && ![408, 429].includes(response.status);
      return { outcome: refused ? "failed" : "retry", error };
    } catch (e: any) {
      return { outcome: "retry", error: `partner unreachable: ${e.message}` };
    }
  };
}

async function main() {
  const env = process.env;
  const name = env.WORKER_NAME ?? "sendjobs-worker-node";
  // node-postgres reads no connect_timeout from the URL: the timeout goes here (TCP
  // keepalives are the worker's default).
  const connection = {
    connectionString: env.DATABASE_URL,
    application_name: name,
    connectionTimeoutMillis: Number(env.CONNECT_TIMEOUT_SECONDS ?? "10") * 1000,
  };
  const worker = new Worker(connection, httpSend(env.PARTNER_URL ?? "", name), {
    queue: env.QUEUE || null,
    batch: Number(env.BATCH ?? "10"),
    leaseSeconds: Number(env.LEASE_SECONDS ?? "30"),
    sendTimeoutSeconds: Number(env.SEND_TIMEOUT_SECONDS ?? "60"),
    pollSeconds: Number(env.POLL_SECONDS ?? "5"),
    listen: (env.LISTEN ?? "1") === "1",
    schema: env.SCHEMA ?? "public",
    listenCheckSeconds: Number(env.LISTEN_CHECK_SECONDS ?? "2"),
    listenCheckTimeoutSeconds: Number(env.LISTEN_CHECK_TIMEOUT_SECONDS ?? "3"),
  });
  const counters = await worker.run();
  console.log(JSON.stringify(counters));
  process.exit(0);
}

main().catch((e) => {
  console.error(`sendjobs-worker: ${e.message} (SQLSTATE ${e.code ?? "none"})`);
  process.exit(1);
});
