"""The stand-in partner: an HTTP server on 127.0.0.1 that the workers send each job to.
It answers with a fixed, seeded temperament per business transaction (some requests
fail on purpose) and records every request it received -- job, claim generation,
arrival time, answer -- in this process's memory, outside the database, so its record
survives server crashes and failovers. The checker compares that record with the
database (invariant 6, re-sends).
"""

import collections
import http.server
import json
import threading
import time

from .records import stable_rng


class Partner:
    """An HTTP server on 127.0.0.1 that plays the partner: it records every request and
    fails some on purpose. Each business transaction has a fixed temperament (seeded):
      ok        200 always
      flaky     500 for its first k requests (k = 1..3), then 200
      down      500 always (the job ends `failed` through retries and max_attempts)
      rejected  422 always (the worker finalizes `failed` at once)
    A request may ask for a slow answer (header X-Delay, or a "delay" in the job's payload,
    seconds) to exercise heartbeats.
    The record (`requests`) is this process's memory: it survives database crashes.
    """

    def __init__(self, seed):
        self.seed = seed
        self.lock = threading.Lock()
        self.requests = []  # dicts: job, gen, worker, key, t, code
        self.per_txn = collections.Counter()
        partner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server naming)
                t = time.time()
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                code = partner.decide(body, t, self.headers)
                payload = body.get("payload")
                delay = float(
                    self.headers.get("X-Delay") or (payload.get("delay") if isinstance(payload, dict) else 0) or 0
                )
                if delay > 0:
                    time.sleep(delay)
                reply = json.dumps({"ok": code == 200, "code": code}).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *a):
                pass

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 256

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/send"
        self.thread = threading.Thread(target=self.server.serve_forever, name="partner", daemon=True)

    def temperament(self, txn):
        r = stable_rng(self.seed, "partner", txn)
        u = r.random()
        if u < 0.04:
            return ("rejected", 0)
        if u < 0.09:
            return ("down", 0)
        if u < 0.25:
            return ("flaky", r.randint(1, 3))
        return ("ok", 0)

    def decide(self, body, t, headers):
        txn = body.get("transaction_id")
        kind, k = self.temperament(txn)
        with self.lock:
            self.per_txn[txn] += 1
            n = self.per_txn[txn]
            if kind == "rejected":
                code = 422
            elif kind == "down":
                code = 500
            elif kind == "flaky" and n <= k:
                code = 500
            else:
                code = 200
            self.requests.append(
                {
                    "job": int(body.get("job_id")),
                    "gen": int(body.get("claim_generation")),
                    "worker": headers.get("X-Worker"),
                    "key": headers.get("Idempotency-Key"),
                    "t": t,
                    "code": code,
                }
            )
        return code

    def start(self):
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
