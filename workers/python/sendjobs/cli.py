"""sendjobs-worker: the worker as a program, sending each job to a partner over HTTP.

    DATABASE_URL="host=/var/run/postgresql dbname=app user=app_worker" \\
    PARTNER_URL=http://127.0.0.1:8080/send QUEUE=acme LEASE_SECONDS=30 sendjobs-worker

Settings (environment): DATABASE_URL, PARTNER_URL, QUEUE (default: any), BATCH (10),
LEASE_SECONDS (30), SEND_TIMEOUT_SECONDS (60), CONNECT_TIMEOUT_SECONDS (10),
POLL_SECONDS (5), LISTEN (1; 0 behind a pooler in transaction mode, which does not keep a
LISTEN), SCHEMA (public: the extension's schema), WORKER_NAME (the connection's
application_name), LISTEN_CHECK_SECONDS (2; 0: none) and LISTEN_CHECK_TIMEOUT_SECONDS (3):
how often the wake-up connection is checked, and how long its answer may take. On
SIGTERM or SIGINT it stops as Worker.stop() does and prints its counters as one JSON
line.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
import os
import urllib.error
import urllib.request

from .worker import SENT, Handler, Job, Outcome, Worker, failed, retry


def http_send(partner_url: str, worker_name: str) -> Handler:
    """A handler that POSTs each job to a partner: 2xx is sent, 4xx but 408 and 429 refused
    for good (failed), anything else retried. The job's idempotency key, or sendjobs-<id>,
    goes as the Idempotency-Key header: a job is sent again only under a new generation,
    after its lease expired."""

    def post(job: Job) -> Outcome:
        body = json.dumps(
            {
                "job_id": job.id,
                "claim_generation": job.generation,
                "transaction_id": job.transaction_id,
                "payload": job.payload,
            }
        ).encode()
        request = urllib.request.Request(
            partner_url,
            data=body,
            method="POST",
            headers={
                "Content-Type": "application/json",
                "X-Worker": worker_name,
                "Idempotency-Key": job.idempotency_key or f"sendjobs-{job.id}",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=60):
                return SENT
        except urllib.error.HTTPError as e:  # 4xx refused for good, but for timeouts and throttling
            refused = 400 <= e.code < 500 and e.code not in (408, 429)
            return (failed if refused else retry)(f"partner answered HTTP {e.code}")
        except OSError as e:
            return retry(f"partner unreachable: {e}")

    async def send(job: Job) -> Outcome:
        # urllib blocks: it runs in a thread. A cancelled send (its job was lost) stops
        # waiting for it; the thread ends with its request.
        return await asyncio.to_thread(post, job)

    return send


def main() -> int:
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    env = os.environ.get
    name = env("WORKER_NAME", "sendjobs-worker-py")
    worker = Worker(
        env("DATABASE_URL", ""),
        http_send(env("PARTNER_URL", ""), name),
        queue=env("QUEUE") or None,
        batch=int(env("BATCH", "10")),
        lease=datetime.timedelta(seconds=float(env("LEASE_SECONDS", "30"))),
        send_timeout=float(env("SEND_TIMEOUT_SECONDS", "60")),
        poll=float(env("POLL_SECONDS", "5")),
        listen=env("LISTEN", "1") == "1",
        schema=env("SCHEMA", "public"),
        name=name,
        connect_timeout=int(env("CONNECT_TIMEOUT_SECONDS", "10")),
        listen_check=float(env("LISTEN_CHECK_SECONDS", "2")),
        listen_check_timeout=float(env("LISTEN_CHECK_TIMEOUT_SECONDS", "3")),
    )
    counters = asyncio.run(worker.run())
    print(json.dumps(counters), flush=True)
    return 0
