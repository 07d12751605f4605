#!/usr/bin/env python3
"""A/B of two builds of the extension, interleaved in one cluster.

Database `arm_a` loads build A's library (its folder first in `dynamic_library_path`, set
for that database alone) and creates the extension at A's version; `arm_b` loads the
installed library at B's version (the default). Each run is a pgbench of the same
claim + finalize cycle (batch 1: sendjobs_finalize; larger: sendjobs_finalize_batch;
every job retried at once, so the backlog stays constant), and the runs alternate
between the arms in a shuffled order within each repetition. Prints per grid point the
jobs/s of both arms (median and range over the repetitions) and B/A, and writes them to
bench/results/<name>/report.md, with one CSV row per run (runs.csv), meta.json and the
scripts that ran (sql/).

With --queue, the claims name one queue (the backlog is in it), every batch size runs
the batch cycle (a claim may come back short), and jobs/s is the claims counted in the
database (the sum of claim_generation before and after); with --b-limit, arm B's queue
gets that flow control (sendjobs_limit(queue, ARGS)): A and B of one build then measure
what a limit costs, and what a binding one lets through.

With --instructions, the server runs under valgrind's callgrind (bench/ab.sh starts it so),
and what is measured is the instructions per job of one client's backend, the claim's and
the finalize's apart: a count, not a time, so the same in a quiet and a loaded machine
(what varies between repetitions is the table's state), and fine enough to show a cost of
1%. The commit's WAL flush and the other processes are not in it.

With --queues N, the backlog is split evenly among N queues (<queue>-1 .. <queue>-N) that
the claims from any queue serve in turn (invariant 21): with the retry cycle every queue
stays backlogged, so jobs/s is the rate at which the workers drain them all together (the
work-conserving target of decision 0019).

With --cpu, each run is instead one client's --cycles cycles of the same claim + finalize
(prepared statements, from this script), and what is measured is the CPU time its
backend spent per job (/proc/<pid>/schedstat, the scheduler's own count, read around
each statement), the claim's and the finalize's apart: a build's cost without the
commit's WAL flush, which dominates one client's jobs/s, and much less disturbed by
other work on the machine than a throughput (the report gives the paired B/A of each
repetition). The server must run on this machine (it does under tests/cluster.py).

Run it inside a cluster (bench/ab.sh does: tests/cluster.py run ... -- python3 bench/ab.py):

    python3 bench/ab.py --a-lib DIR --a-version 0.1.0 [--duration 5] [--reps 3]
"""

import argparse
import csv
import random
import statistics
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import common  # noqa: E402  (bench/common.py)
from common import psql, spread  # noqa: E402

CYCLE = {
    # batch 1: the single finalize, as a worker finishing one job calls it
    ("one", "retry"): """SELECT id, claim_generation AS generation FROM sendjobs_claim(1, '1 minute') \\gset
SELECT sendjobs_finalize(:id, :generation, 'retry', NULL, now());
""",
    ("batch", "retry"): """SELECT array_agg(id) AS ids, array_agg(claim_generation) AS generations
  FROM sendjobs_claim(:batch, '1 minute') \\gset
SELECT count(*) FROM sendjobs_finalize_batch(:ids::int8[], :generations::int8[], 'retry', NULL, now());
""",
    # 'sent': every job finishes, with its event (the backlog is topped up before each run)
    ("one", "sent"): """SELECT id, claim_generation AS generation FROM sendjobs_claim(1, '1 minute') \\gset
SELECT sendjobs_finalize(:id, :generation, 'sent');
""",
    ("batch", "sent"): """SELECT array_agg(id) AS ids, array_agg(claim_generation) AS generations
  FROM sendjobs_claim(:batch, '1 minute') \\gset
SELECT count(*) FROM sendjobs_finalize_batch(:ids::int8[], :generations::int8[], 'sent');
""",
}

# One queue named, claims that may come back short (flow control): the batch cycle for
# every batch size, an empty claim finalizing nothing.
QUEUE_CYCLE = {
    "retry": """SELECT coalesce(array_agg(id), '{{}}') AS ids, coalesce(array_agg(claim_generation), '{{}}') AS generations
  FROM sendjobs_claim(:batch, '1 minute', '{queue}') \\gset
SELECT count(*) FROM sendjobs_finalize_batch(:ids::int8[], :generations::int8[], 'retry', NULL, now());
""",
    "sent": """SELECT coalesce(array_agg(id), '{{}}') AS ids, coalesce(array_agg(claim_generation), '{{}}') AS generations
  FROM sendjobs_claim(:batch, '1 minute', '{queue}') \\gset
SELECT count(*) FROM sendjobs_finalize_batch(:ids::int8[], :generations::int8[], 'sent');
""",
}
CLAIMS_SO_FAR = "SELECT coalesce(sum(claim_generation), 0) FROM send_jobs"


def prepare(db, version, lib_dir, backlog, queue, queues=1):
    psql("postgres", f"CREATE DATABASE {db}")
    if lib_dir:
        psql("postgres", f"ALTER DATABASE {db} SET dynamic_library_path = '{lib_dir}:$libdir'")
    psql(db, f"CREATE EXTENSION sendjobs VERSION '{version}'")
    top_up(db, backlog, queue, queues)


def top_up(db, backlog, queue, queues=1):
    """Finished jobs and their events go; pending jobs are added up to `backlog`, in
    `queue`, or taking turns among `queues` queues named <queue>-1 .. <queue>-<queues>."""
    name = f"'{queue}'" if queues == 1 else f"'{queue}-' || (1 + i % {queues})"
    psql(db, common.CLEAR_FINISHED)
    psql(
        db,
        f"INSERT INTO send_jobs (payload, queue, max_attempts, next_attempt_at) "
        f"SELECT '{{}}', {name}, 1000000000, now() - interval '1 hour' "
        f"  FROM generate_series(1, {backlog} - (SELECT count(*) FROM send_jobs)) AS i",
    )
    psql(db, "VACUUM ANALYZE")


def reset(db, outcome, backlog, queue, queues=1):
    """The next run starts from the same footing: the backlog topped up (sent), or the
    dead rows of the last run vacuumed (retry)."""
    if outcome == "sent":
        top_up(db, backlog, queue, queues)
    else:
        psql(db, "VACUUM send_jobs")


def run(db, script, clients, batch, duration, count_claims):
    """(jobs/s, WAL bytes per job) of one pgbench run; the WAL is the whole cluster's
    during the run (the other arm is idle then). With count_claims, the jobs are the
    claims the database counted (a claim may come back short), else full batches."""
    before = psql(db, "SELECT pg_current_wal_insert_lsn()", capture=True)
    claims_before = int(psql(db, CLAIMS_SO_FAR, capture=True)) if count_claims else 0
    r = common.pgbench(db, script, clients, duration, {"batch": batch}, check=True)
    wal = int(psql(db, f"SELECT pg_current_wal_insert_lsn() - '{before}'::pg_lsn", capture=True))
    if count_claims:
        jobs = int(psql(db, CLAIMS_SO_FAR, capture=True)) - claims_before
        seconds = r["cycles"] / r["tps"] if r["tps"] else duration
        return jobs / seconds, wal / max(1, jobs)
    return r["tps"] * batch, wal / max(1, r["cycles"] * batch)


def cpu_ns(pid):
    """The CPU time the process has spent so far, in ns (the first field of schedstat)."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def connect_cycle(db, batch, queue, outcome):
    """A connection of its own with the claim + finalize cycle prepared: (connection,
    its backend's pid, cycle), where cycle() runs one claim and its finalize and returns
    the backend's CPU ns for each. `queue`: claim from it by name (--queue), or None: from
    any queue, as the pgbench cycle."""
    import psycopg2  # Debian's python3-psycopg2 (bench/run.sh installs it)

    conn = psycopg2.connect(dbname=db)
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("SELECT pg_backend_pid()")
    pid = cur.fetchone()[0]
    by_name = f", '{queue}'" if queue else ""
    cur.execute(
        f"PREPARE claim AS SELECT array_agg(id), array_agg(claim_generation)"
        f" FROM sendjobs_claim({batch}, '1 minute'{by_name})"
    )
    retry = ", NULL, now()" if outcome == "retry" else ""
    if batch == 1:
        cur.execute(f"PREPARE fin(int8, int8) AS SELECT sendjobs_finalize($1, $2, '{outcome}'{retry})")
    else:
        cur.execute(
            f"PREPARE fin(int8[], int8[]) AS SELECT count(*) FROM sendjobs_finalize_batch($1, $2, '{outcome}'{retry})"
        )

    def cycle():
        """One claim and its finalize: the backend's CPU ns for each."""
        t0 = cpu_ns(pid)
        cur.execute("EXECUTE claim")
        ids, gens = cur.fetchone()
        t1 = cpu_ns(pid)
        cur.execute("EXECUTE fin(%s, %s)", (ids[0], gens[0]) if batch == 1 else (ids, gens))
        cur.fetchone()
        return t1 - t0, cpu_ns(pid) - t1

    return conn, pid, cycle


def run_cpu(db, batch, cycles, queue, outcome):
    """(claim us/job, finalize us/job, WAL bytes per job) of one client's `cycles`
    cycles: the backend's CPU time around each statement."""
    conn, _pid, cycle = connect_cycle(db, batch, queue, outcome)
    cur = conn.cursor()
    for _ in range(20):  # the plans made, the caches warm
        cycle()
    cur.execute("SELECT pg_current_wal_insert_lsn()")
    lsn = cur.fetchone()[0]
    claim_ns = finalize_ns = 0
    for _ in range(cycles):
        claim, finalize = cycle()
        claim_ns += claim
        finalize_ns += finalize
    cur.execute("SELECT pg_current_wal_insert_lsn() - %s::pg_lsn", (lsn,))
    wal = float(cur.fetchone()[0])
    conn.close()
    jobs = cycles * batch
    return claim_ns / jobs / 1000, finalize_ns / jobs / 1000, wal / jobs


# The functions whose inclusive instructions the --instructions report splits out.
CALLGRIND_PARTS = {
    "claim": ("sendjobs_claim_wrapper",),
    "finalize": ("sendjobs_finalize_wrapper", "sendjobs_finalize_batch_wrapper"),
}


def run_instructions(db, batch, cycles, queue, outcome, outdir, reset_arm):
    """(all, claim, finalize) instructions per job of the backend running the cycle,
    counted by callgrind: the difference between a connection that ran `cycles` cycles
    more than another, each from the same reset state, so that the connection's start,
    the plans' making and the first cycles cancel out."""
    counts = []
    for n in (10, 10 + cycles):
        reset_arm()
        conn, pid, cycle = connect_cycle(db, batch, queue, outcome)
        for _ in range(n):
            cycle()
        conn.close()
        counts.append(common.callgrind_counts(common.callgrind_output(outdir, pid), CALLGRIND_PARTS))
    (t1, p1), (t2, p2) = counts
    jobs = cycles * batch
    return (t2 - t1) / jobs, (p2["claim"] - p1["claim"]) / jobs, (p2["finalize"] - p1["finalize"]) / jobs


def interleaved(a, folder, header, measure, after=None):
    """Runs measure(arm, batch) for each repetition, batch and arm (in a shuffled order),
    one runs.csv row each (rep, batch, arm, then its values); `after(arm)` once each has
    run. Returns {(batch, arm): [values of each repetition]}."""
    runs = open(folder / "runs.csv", "w", newline="")
    out = csv.writer(runs)
    out.writerow(["rep", "batch", "arm"] + header)
    batches = common.parse_list(a.batches)
    got = {(b, arm): [] for b in batches for arm in ("arm_a", "arm_b")}
    rng = random.Random(a.seed)
    for rep in range(a.reps):
        for batch in batches:
            arms = ["arm_a", "arm_b"]
            rng.shuffle(arms)
            for arm in arms:
                values = measure(arm, batch)
                got[(batch, arm)].append(values)
                out.writerow([rep + 1, batch, arm] + [round(x, 2) for x in values])
                runs.flush()
                if after:
                    after(arm)
        print(f"== repetition {rep + 1} of {a.reps} done", flush=True)
    runs.close()
    return got


def instructions_main(a, folder, meta, queue):
    """--instructions: instructions per job of one client's backend, A and B interleaved."""
    batches = common.parse_list(a.batches)
    got = interleaved(
        a,
        folder,
        ["all_per_job", "claim_per_job", "finalize_per_job"],
        lambda arm, batch: run_instructions(
            arm,
            batch,
            max(20, a.cycles // batch),
            a.queue,
            a.outcome,
            a.callgrind_dir,
            lambda: reset(arm, a.outcome, a.backlog, queue),
        ),
    )

    def count(values):
        return f"{statistics.median(values):,.0f} ({min(values):,.0f}-{max(values):,.0f})"

    def ratio(batch, i):
        a_, b_ = got[(batch, "arm_a")], got[(batch, "arm_b")]
        return f"{statistics.median(r[i] for r in b_) / statistics.median(r[i] for r in a_):.3f}"

    lines = (
        ["# A/B of two builds: instructions per job (callgrind)", ""]
        + common.header_lines(meta)
        + [
            "",
            f"A = {a.a_version} from {a.a_lib}, B = {a.b_version_resolved} installed; outcome {a.outcome}; "
            f"{a.backlog} jobs; 1 client, the backend under callgrind, {a.cycles} jobs a run more than its "
            f"twin's (at least 20 cycles), {a.reps} repetitions, interleaved; instructions per job, median "
            "(range); B/A of the medians",
            "",
            "| batch | A all | B all | B/A all | A claim | B claim | B/A claim | A finalize | B finalize | B/A finalize |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
    )
    for batch in batches:
        ra, rb = got[(batch, "arm_a")], got[(batch, "arm_b")]
        lines.append(
            f"| {batch} | {count([r[0] for r in ra])} | {count([r[0] for r in rb])} | {ratio(batch, 0)} | "
            f"{count([r[1] for r in ra])} | {count([r[1] for r in rb])} | {ratio(batch, 1)} | "
            f"{count([r[2] for r in ra])} | {count([r[2] for r in rb])} | {ratio(batch, 2)} |"
        )
    return common.write_report(folder, "\n".join(lines) + "\n", "ab")


def cpu_main(a, folder, meta, queue):
    """--cpu: the backend's CPU time per job, A and B interleaved, paired per repetition."""
    batches = common.parse_list(a.batches)
    got = interleaved(
        a,
        folder,
        ["claim_us_per_job", "finalize_us_per_job", "wal_per_job"],
        lambda arm, batch: run_cpu(arm, batch, max(20, a.cycles // batch), a.queue, a.outcome),
        after=lambda arm: reset(arm, a.outcome, a.backlog, queue),
    )

    def us(values):
        return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"

    def paired(batch, pick):
        ratios = sorted(pick(b) / pick(x) for x, b in zip(got[(batch, "arm_a")], got[(batch, "arm_b")]))
        return f"{statistics.median(ratios):.3f} ({ratios[0]:.3f}-{ratios[-1]:.3f})"

    lines = (
        ["# A/B of two builds: the backend's CPU time per job", ""]
        + common.header_lines(meta)
        + [
            "",
            f"A = {a.a_version} from {a.a_lib}, B = {a.b_version_resolved} installed; outcome {a.outcome}; "
            f"{a.backlog} jobs; 1 client, {a.cycles} jobs a run (at least 20 cycles), {a.reps} repetitions, "
            "interleaved; us of backend CPU per job, median (range); B/A paired per repetition, median (range)",
            "",
            "| batch | A claim | B claim | B/A claim | A finalize | B finalize | B/A finalize | B/A both | A WAL B/job | B WAL B/job |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
    )
    for batch in batches:
        ra, rb = got[(batch, "arm_a")], got[(batch, "arm_b")]
        lines.append(
            f"| {batch} | {us([r[0] for r in ra])} | {us([r[0] for r in rb])} | {paired(batch, lambda r: r[0])} | "
            f"{us([r[1] for r in ra])} | {us([r[1] for r in rb])} | {paired(batch, lambda r: r[1])} | "
            f"{paired(batch, lambda r: r[0] + r[1])} | {statistics.median(r[2] for r in ra):,.0f} | "
            f"{statistics.median(r[2] for r in rb):,.0f} |"
        )
    return common.write_report(folder, "\n".join(lines) + "\n", "ab")


def main(argv):
    p = argparse.ArgumentParser(
        prog="bench/ab.sh", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--a-lib",
        required=True,
        help="folder holding build A's library (sendjobs.so, or sendjobs-<version>.so); bench/ab.sh sets it",
    )
    p.add_argument("--a-version", required=True, help="the version A's database creates; bench/ab.sh sets it")
    p.add_argument("--b-version", default=None, help="default: the installed default version")
    p.add_argument("--backlog", type=int, default=10000)
    p.add_argument("--clients", default="1,4,8")
    p.add_argument("--batches", default="1,10,100")
    p.add_argument("--duration", type=int, default=5)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument(
        "--outcome",
        choices=["retry", "sent"],
        default="retry",
        help="retry: jobs go back to pending (a constant backlog); sent: every job "
        "finishes with its event, and the backlog is topped up before each run",
    )
    p.add_argument(
        "--queue",
        default=None,
        help="claim from this queue by name (the batch cycle for every batch, jobs counted in the database)",
    )
    p.add_argument(
        "--queues", type=int, default=1, help="the backlog split evenly among this many queues, claimed from any queue"
    )
    p.add_argument(
        "--b-limit",
        default=None,
        metavar="ARGS",
        help='arm B\'s queue gets sendjobs_limit(queue, ARGS), e.g. "max_in_flight => 4" (needs --queue)',
    )
    p.add_argument(
        "--cpu",
        action="store_true",
        help="measure the backend's CPU time per job of one client instead of jobs/s (--clients is ignored)",
    )
    p.add_argument(
        "--cycles",
        type=int,
        default=None,
        help="with --cpu (default 3000) or --instructions (default 400): jobs a run "
        "(claims of --batch each; at least 20 claims)",
    )
    p.add_argument(
        "--instructions",
        action="store_true",
        help="count the instructions per job of one client's backend instead (the server under "
        "callgrind; --clients is ignored; bench/ab.sh starts it so)",
    )
    p.add_argument("--callgrind-dir", default=None, help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, default=1)
    common.add_name_argument(p, "ab")
    p.add_argument("--command", default="bash bench/ab.sh", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.cycles is None:
        a.cycles = 400 if a.instructions else 3000
    b_version = a.b_version or psql(
        "postgres", "SELECT default_version FROM pg_available_extensions WHERE name = 'sendjobs'", capture=True
    )
    folder = common.results_dir("ab", a.name)
    meta = common.run_meta(a.command)
    meta.update(a_version=a.a_version, a_lib=a.a_lib, b_version=b_version)
    common.write_meta(folder, meta)
    if a.b_limit and not a.queue:
        p.error("--b-limit needs --queue")
    if a.queues < 1 or (a.queues > 1 and (a.queue or a.cpu or a.instructions)):
        p.error(
            "--queues N: N >= 1, and more than 1 only for jobs/s from any queue (no --queue, --cpu, --instructions)"
        )
    queue = a.queue or "default"
    prepare("arm_a", a.a_version, a.a_lib, a.backlog, queue, a.queues)
    prepare("arm_b", b_version, None, a.backlog, queue, a.queues)
    if a.b_limit:
        psql("arm_b", f"SELECT sendjobs_limit('{queue}', {a.b_limit})")
    if a.cpu:
        a.b_version_resolved = b_version
        return cpu_main(a, folder, meta, queue)
    if a.instructions:
        if not a.callgrind_dir:
            p.error("--instructions needs the server under callgrind: run it through bench/ab.sh")
        a.b_version_resolved = b_version
        return instructions_main(a, folder, meta, queue)
    if a.queue:
        script = common.write_script(folder, f"queue_{a.outcome}.sql", QUEUE_CYCLE[a.outcome].format(queue=queue))
        scripts = {"one": script, "batch": script}
    else:
        scripts = {
            name: common.write_script(folder, f"{name}_{outcome}.sql", text)
            for (name, outcome), text in CYCLE.items()
            if outcome == a.outcome
        }
    runs = open(folder / "runs.csv", "w", newline="")
    out = csv.writer(runs)
    out.writerow(["rep", "clients", "batch", "arm", "jobs_s", "wal_per_job"])
    points = [(c, b) for c in common.parse_list(a.clients) for b in common.parse_list(a.batches)]
    results = {(pt, arm): [] for pt in points for arm in ("arm_a", "arm_b")}
    wal = {(pt, arm): [] for pt in points for arm in ("arm_a", "arm_b")}
    rng = random.Random(a.seed)
    for rep in range(a.reps):
        for clients, batch in points:
            arms = ["arm_a", "arm_b"]
            rng.shuffle(arms)
            for arm in arms:
                script = scripts["one" if batch == 1 else "batch"]
                jobs_s, wal_per_job = run(arm, script, clients, batch, a.duration, bool(a.queue))
                results[((clients, batch), arm)].append(jobs_s)
                wal[((clients, batch), arm)].append(wal_per_job)
                out.writerow([rep + 1, clients, batch, arm, round(jobs_s, 1), round(wal_per_job)])
                runs.flush()
                reset(arm, a.outcome, a.backlog, queue, a.queues)
        print(f"== repetition {rep + 1} of {a.reps} done", flush=True)
    runs.close()
    lines = (
        ["# A/B of two builds", ""]
        + common.header_lines(meta)
        + [
            "",
            f"A = {a.a_version} from {a.a_lib}, B = {b_version} installed; outcome {a.outcome}; {a.backlog} jobs"
            + (f" in queue {queue} (claimed by name)" if a.queue else "")
            + (f" in {a.queues} queues (claimed from any queue)" if a.queues > 1 else "")
            + (f"; arm B's queue limited: sendjobs_limit({queue!r}, {a.b_limit})" if a.b_limit else "")
            + ", "
            f"{a.duration} s runs, {a.reps} repetitions, interleaved",
            "",
            "| clients | batch | A jobs/s (median, range) | B jobs/s (median, range) | B/A | A WAL B/job | B WAL B/job |",
            "|---|---|---|---|---|---|---|",
        ]
    )
    for clients, batch in points:
        ra, rb = results[((clients, batch), "arm_a")], results[((clients, batch), "arm_b")]
        wa, wb = (
            statistics.median(wal[((clients, batch), "arm_a")]),
            statistics.median(wal[((clients, batch), "arm_b")]),
        )
        lines.append(
            f"| {clients} | {batch} | {spread(ra)} | {spread(rb)} | "
            f"{statistics.median(rb) / statistics.median(ra):.3f} | {wa:,.0f} | {wb:,.0f} |"
        )
    return common.write_report(folder, "\n".join(lines) + "\n", "ab")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
