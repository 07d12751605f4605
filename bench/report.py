#!/usr/bin/python3
"""Turns a run of the grid, bench/results/<name>/{runs.csv,meta.json}, into
that folder's report.md and PNG plots, and prints the throughput table and the PASS/FAIL
lines of the targets. bench/run.sh calls it after the grid; it runs nothing itself.

    /usr/bin/python3 bench/report.py bench/results/<name>
"""

import argparse
import csv
import os
import sys
from collections import defaultdict
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import common  # noqa: E402  (bench/common.py)
from common import median  # noqa: E402

NOISE = 0.05  # "within 5% noise"
ARM_ORDER = ["E", "F", "M"]
ARM_LABEL = {
    "E": "E  extension functions",
    "F": "F  floor: 2 single-row UPDATE txns",
    "M": "M  minimal SQL queue (yardstick)",
}
COLORS = {"E": "#d62728", "F": "#7f7f7f", "M": "#9467bd"}


def load(results):
    rows = []
    with open(results / "runs.csv") as f:
        for r in csv.DictReader(f):
            for k in ("backlog", "rep", "clients", "batch", "cycles", "jobs", "failed"):
                r[k] = int(r[k]) if r[k] not in ("", None) else 0
            for k in (
                "jobs_per_s",
                "tps",
                "claim_ms",
                "finalize_ms",
                "wal_per_job",
                "wal_per_cycle",
                "hot_pct",
                "n_dead_tup",
                "n_live_tup",
                "table_bytes",
                "indexes_bytes",
                "total_bytes",
                "autovacuums",
                "autovacuums_any",
                "lat_avg_ms",
                "leftover_in_flight",
            ):
                r[k] = float(r[k]) if r.get(k) not in ("", None) else None
            rows.append(r)
    return rows, common.read_meta(results)


class Agg:
    """Medians over the repetitions of each (variant, backlog, clients, batch, arm)."""

    def __init__(self, rows):
        self.groups = defaultdict(list)
        for r in rows:
            if r["error"]:
                continue
            self.groups[(r["variant"], r["backlog"], r["clients"], r["batch"], r["arm"])].append(r)
        self.errors = [r for r in rows if r["error"]]

    def get(self, variant, backlog, clients, batch, arm, field="jobs_per_s"):
        if arm == "F":
            batch = 1
        return median([r[field] for r in self.groups.get((variant, backlog, clients, batch, arm), [])])

    def spread(self, variant, backlog, clients, batch, arm, field="jobs_per_s"):
        if arm == "F":
            batch = 1
        vals = [r[field] for r in self.groups.get((variant, backlog, clients, batch, arm), []) if r[field] is not None]
        return (min(vals), max(vals), len(vals)) if vals else (None, None, 0)

    def reps(self, backlog, clients, batch, arm, field="jobs_per_s"):
        """`arm min-max` of the retry runs behind one median, to judge a miss against noise."""
        lo, hi, n = self.spread("retry", backlog, clients, batch, arm, field)
        if not n:
            return f"{arm} –"
        fmt = n3 if field.endswith("_ms") else n0
        return f"{arm} {fmt(lo)}-{fmt(hi)}"

    def last(self, variant, backlog, arm):
        """The row of the last run on an arm's table in a phase (table size after)."""
        best = None
        for (v, b, _c, _bt, a), rs in self.groups.items():
            if v == variant and b == backlog and a == arm:
                for r in rs:
                    if best is None or r["started_at"] > best["started_at"]:
                        best = r
        return best

    def axes(self, variant):
        keys = [k for k in self.groups if k[0] == variant]
        backlogs = sorted({k[1] for k in keys})
        clients = sorted({k[2] for k in keys})
        batches = sorted({k[3] for k in keys if k[4] != "F"})
        arms = [a for a in ARM_ORDER if any(k[4] == a for k in keys)]
        return backlogs, clients, batches, arms


# --------------------------------------------------------------------------------------
# Formatting


def n0(v):
    return "–" if v is None else f"{v:,.0f}"


def n2(v):
    return "–" if v is None else f"{v:.2f}"


def n3(v):
    return "–" if v is None else f"{v:.3f}"


def ratio(a, b):
    return None if a is None or b in (None, 0) else a / b


def bl(b):
    return (
        f"{b // 1_000_000}M"
        if b >= 1_000_000 and b % 1_000_000 == 0
        else (f"{b // 1000}k" if b >= 1000 and b % 1000 == 0 else str(b))
    )


def mb(v):
    return "–" if v is None else f"{v / 1048576:.1f}"


def table(header, rows, align=None):
    align = align or ["r"] * len(header)
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(("---:" if a == "r" else ":---") for a in align) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


# --------------------------------------------------------------------------------------
# Targets


def targets(agg):
    """[(name, status, detail)] with status PASS / FAIL / SKIP."""
    out = []
    backlogs, clients, batches, arms = agg.axes("retry")

    def e_ratio_target(name, numerator, denominator, threshold, detail):
        """PASS when E's (batch, arm) `numerator` / `denominator` jobs/s >= threshold everywhere."""
        det, ok = [], True
        for b in backlogs:
            for c in clients:
                r = ratio(agg.get("retry", b, c, *numerator), agg.get("retry", b, c, *denominator))
                if r is None:
                    continue
                runs = (
                    ""
                    if r >= threshold
                    else (
                        f" (runs: {agg.reps(b, c, *numerator)} vs {agg.reps(b, c, *denominator)})"
                        if numerator[1] != denominator[1]
                        else f" (runs at batch {numerator[0]}: {agg.reps(b, c, *numerator)})"
                    )
                )
                det.append(f"{bl(b)}/c{c}: {detail(r)}{runs}")
                ok &= r >= threshold
        return (name, "PASS" if ok else "FAIL", "; ".join(det))

    # 1. batch 100 per-job throughput >= 10x batch 1
    if 1 in batches and 100 in batches:
        out.append(
            e_ratio_target("E jobs/s at batch 100 >= 10x batch 1", (100, "E"), (1, "E"), 10, lambda r: f"{r:.1f}x")
        )
    else:
        out.append(("E jobs/s at batch 100 >= 10x batch 1", "SKIP", "the grid lacks batch 1 or 100"))

    # 2. claim latency at the largest backlog <= 1.2x the smallest
    if len(backlogs) >= 2:
        lo, hi = backlogs[0], backlogs[-1]
        det, ok = [], True
        for c in clients:
            for bt in batches:
                r = ratio(agg.get("retry", hi, c, bt, "E", "claim_ms"), agg.get("retry", lo, c, bt, "E", "claim_ms"))
                if r is None:
                    continue
                runs = (
                    ""
                    if r <= 1.2
                    else (
                        f" (claim ms runs: {agg.reps(hi, c, bt, 'E', 'claim_ms')} at "
                        f"{bl(hi)}, {agg.reps(lo, c, bt, 'E', 'claim_ms')} at {bl(lo)})"
                    )
                )
                det.append(f"c{c}/b{bt}: {r:.2f}x{runs}")
                ok &= r <= 1.2
        out.append((f"E claim latency at {bl(hi)} <= 1.2x at {bl(lo)}", "PASS" if ok else "FAIL", "; ".join(det)))
    else:
        out.append(("E claim latency at 1M <= 1.2x at 10k", "SKIP", "one backlog only"))

    # 3. throughput does not fall as clients rise
    if len(clients) >= 2:
        det, ok = [], True
        for b in backlogs:
            for bt in batches:
                vals = [agg.get("retry", b, c, bt, "E") for c in clients]
                if None in vals:
                    continue
                fall = [
                    f"{clients[i]}->{clients[i + 1]}: {vals[i + 1] / vals[i]:.2f}x; runs at "
                    f"{clients[i]} clients {agg.reps(b, clients[i], bt, 'E')}, at {clients[i + 1]} "
                    f"{agg.reps(b, clients[i + 1], bt, 'E')}"
                    for i in range(len(vals) - 1)
                    if vals[i + 1] < (1 - NOISE) * vals[i]
                ]
                if fall:
                    ok = False
                    det.append(f"{bl(b)}/b{bt} falls ({', '.join(fall)})")
                else:
                    det.append(f"{bl(b)}/b{bt} ok ({vals[-1] / vals[0]:.2f}x from {clients[0]} to {clients[-1]})")
        out.append(
            (
                f"E jobs/s does not fall as clients rise {clients[0]}->{clients[-1]} (5% noise)",
                "PASS" if ok else "FAIL",
                "; ".join(det),
            )
        )
    else:
        out.append(("E jobs/s does not fall as clients rise", "SKIP", "one client count only"))

    # 4. E at batch 1 >= 0.7 x F
    if 1 in batches and "F" in arms:
        out.append(
            e_ratio_target(
                "E at batch 1 >= 0.7x F (jobs/s vs F cycles/s)", (1, "E"), (1, "F"), 0.7, lambda r: f"{r:.2f}"
            )
        )
    else:
        out.append(("E at batch 1 >= 0.7x F", "SKIP", "no batch 1 or no F"))
    if "M" in arms and "F" in arms and 1 in batches:  # context, not a target
        ratios = [
            ratio(agg.get("retry", b, c, 1, "M"), agg.get("retry", b, c, 1, "F")) for b in backlogs for c in clients
        ]
        ratios = [r for r in ratios if r is not None]
        if ratios:
            out.append(
                (
                    "(context, not a target) M at batch 1 vs F",
                    "INFO",
                    f"{min(ratios):.2f} to {max(ratios):.2f}: what a minimal SQL queue on the same table reaches",
                )
            )
    return out


# --------------------------------------------------------------------------------------
# Plots


def plots(agg, plot_dir, meta):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker  # noqa: F401

    plot_dir.mkdir(parents=True, exist_ok=True)
    backlogs, clients, batches, arms = agg.axes("retry")
    files = []
    tag = f"{meta.get('mode', '?')} run, {meta.get('date', '')}, git {meta.get('git_rev', '?')}"

    def draw(ax, xs, arm, b, key):
        ys, lo, hi = [], [], []
        for x in xs:
            c, bt = key(x)
            y = agg.get("retry", b, c, bt, arm)
            mn, mx, _ = agg.spread("retry", b, c, bt, arm)
            ys.append(y)
            lo.append(None if y is None else y - mn)
            hi.append(None if y is None else mx - y)
        pts = [(x, y, low, high) for x, y, low, high in zip(xs, ys, lo, hi) if y is not None]
        if not pts:
            return
        px, py, pl, ph = zip(*pts)
        ax.errorbar(
            px,
            py,
            yerr=[pl, ph],
            marker="o",
            ms=4,
            capsize=3,
            lw=1.6,
            color=COLORS.get(arm),
            label=ARM_LABEL.get(arm, arm),
            ls="--" if arm == "F" else "-",
        )

    def legend(fig, axs):
        seen = {}
        for row in axs:
            for ax in row:
                for h, label in zip(*ax.get_legend_handles_labels()):
                    seen.setdefault(label, h)
        order = [ARM_LABEL[a] for a in ARM_ORDER if ARM_LABEL[a] in seen]
        fig.legend([seen[label] for label in order], order, loc="lower center", ncol=2, fontsize=9, frameon=False)

    # throughput vs clients: one panel per (backlog, batch)
    fig, axs = plt.subplots(
        len(backlogs), len(batches), figsize=(4.2 * len(batches), 3.4 * len(backlogs)), squeeze=False
    )
    for i, b in enumerate(backlogs):
        for j, bt in enumerate(batches):
            ax = axs[i][j]
            for arm in arms:
                draw(ax, clients, arm, b, lambda c, bt=bt: (c, bt))
            ax.set_title(f"backlog {bl(b)}, batch {bt}", fontsize=10)
            ax.set_xticks(clients)
            ax.set_xlabel("clients")
            ax.set_ylabel("jobs / s")
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
    legend(fig, axs)
    fig.suptitle(f"sendjobs: throughput vs clients (median, bars = min..max)\n{tag}", fontsize=11)
    fig.tight_layout(rect=(0, 0.11, 1, 0.95))
    p = plot_dir / "throughput_vs_clients.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    files.append(p)

    # throughput vs batch: one panel per (backlog, clients), log-log
    fig, axs = plt.subplots(
        len(backlogs), len(clients), figsize=(4.2 * len(clients), 3.4 * len(backlogs)), squeeze=False
    )
    for i, b in enumerate(backlogs):
        for j, c in enumerate(clients):
            ax = axs[i][j]
            for arm in arms:
                if arm == "F":
                    f = agg.get("retry", b, c, 1, "F")
                    if f:
                        ax.axhline(f, color=COLORS["F"], ls="--", lw=1.2, label=ARM_LABEL["F"])
                    continue
                draw(ax, batches, arm, b, lambda bt, c=c: (c, bt))
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks(batches)
            ax.set_xticklabels([str(x) for x in batches])
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.set_title(f"backlog {bl(b)}, {c} client{'s' if c > 1 else ''}", fontsize=10)
            ax.set_xlabel("batch size (jobs per claim)")
            ax.set_ylabel("jobs / s")
            ax.grid(alpha=0.3, which="both")
    legend(fig, axs)
    fig.suptitle(f"sendjobs: throughput vs batch size (median, bars = min..max)\n{tag}", fontsize=11)
    fig.tight_layout(rect=(0, 0.11, 1, 0.95))
    p = plot_dir / "throughput_vs_batch.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    files.append(p)

    # claim latency vs backlog
    if len(backlogs) >= 2:
        fig, axs = plt.subplots(1, len(batches), figsize=(4.2 * len(batches), 3.4), squeeze=False)
        for j, bt in enumerate(batches):
            ax = axs[0][j]
            for arm in [a for a in arms if a != "F"]:
                for k, b in enumerate(backlogs):
                    ys = [agg.get("retry", b, c, bt, arm, "claim_ms") for c in clients]
                    ax.plot(
                        clients,
                        ys,
                        marker="o" if k == 0 else "s",
                        ms=4,
                        color=COLORS.get(arm),
                        ls="-" if k == 0 else ":",
                        label=f"{arm} {bl(b)}",
                    )
            ax.set_title(f"claim latency, batch {bt}", fontsize=10)
            ax.set_xticks(clients)
            ax.set_xlabel("clients")
            ax.set_ylabel("ms per claim statement")
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
        handles, labels = axs[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=min(6, len(labels)), fontsize=9, frameon=False)
        fig.suptitle(
            f"sendjobs: claim latency by backlog (solid {bl(backlogs[0])}, dotted {bl(backlogs[-1])})\n{tag}",
            fontsize=11,
        )
        fig.tight_layout(rect=(0, 0.1, 1, 0.9))
        p = plot_dir / "claim_latency.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        files.append(p)
    return files


# --------------------------------------------------------------------------------------
# The report


def throughput_table(agg):
    backlogs, clients, batches, arms = agg.axes("retry")
    others = [a for a in arms if a != "E"]  # arms is in ARM_ORDER
    header = ["backlog", "clients", "batch"] + [f"{a} jobs/s" for a in arms] + [f"E/{a}" for a in others]
    rows = []
    for b in backlogs:
        for c in clients:
            for bt in batches:
                vals = {a: agg.get("retry", b, c, bt, a) for a in arms}
                row = [bl(b), c, bt] + [n0(vals[a]) for a in arms]
                row += [n2(ratio(vals.get("E"), vals[a])) for a in others]
                rows.append(row)
    return table(header, rows)


def latency_table(agg):
    backlogs, clients, batches, arms = agg.axes("retry")
    arms = [a for a in arms if a != "F"]
    header = ["backlog", "clients", "batch"] + [f"{a} claim ms" for a in arms] + [f"{a} finalize ms" for a in arms]
    rows = []
    for b in backlogs:
        for c in clients:
            for bt in batches:
                rows.append(
                    [bl(b), c, bt]
                    + [n3(agg.get("retry", b, c, bt, a, "claim_ms")) for a in arms]
                    + [n3(agg.get("retry", b, c, bt, a, "finalize_ms")) for a in arms]
                )
    return table(header, rows)


def backlog_latency_table(agg):
    backlogs, clients, batches, arms = agg.axes("retry")
    if len(backlogs) < 2:
        return "_One backlog only: no comparison._"
    lo, hi = backlogs[0], backlogs[-1]
    arms = [a for a in arms if a != "F"]
    header = ["clients", "batch"]
    for a in arms:
        header += [f"{a} {bl(lo)}", f"{a} {bl(hi)}", f"{a} ratio"]
    rows = []
    for c in clients:
        for bt in batches:
            row = [c, bt]
            for a in arms:
                x = agg.get("retry", lo, c, bt, a, "claim_ms")
                y = agg.get("retry", hi, c, bt, a, "claim_ms")
                row += [n3(x), n3(y), n2(ratio(y, x))]
            rows.append(row)
    return table(header, rows)


def footprint_table(agg):
    backlogs, clients, batches, arms = agg.axes("retry")
    header = [
        "backlog",
        "clients",
        "batch",
        "WAL bytes/job " + "/".join(arms),
        "HOT % " + "/".join(arms),
        "dead tuples after run " + "/".join(arms),
        "autovacuum runs during run (any table) " + "/".join(arms),
    ]
    rows = []
    for b in backlogs:
        for c in clients:
            for bt in batches:

                def cell(field, fmt, b=b, c=c, bt=bt):
                    return " / ".join(fmt(agg.get("retry", b, c, bt, a, field)) for a in arms)

                rows.append(
                    [
                        bl(b),
                        c,
                        bt,
                        cell("wal_per_job", n0),
                        cell("hot_pct", lambda v: "–" if v is None else f"{v:.0f}"),
                        cell("n_dead_tup", n0),
                        cell("autovacuums_any", n0),
                    ]
                )
    return table(header, rows)


def size_table(agg):
    backlogs, _clients, _batches, arms = agg.axes("retry")
    rows = []
    for b in backlogs:
        for a in arms:
            r = agg.last("retry", b, a)
            if not r:
                continue
            rows.append(
                [
                    bl(b),
                    a,
                    mb(r["table_bytes"]),
                    mb(r["indexes_bytes"]),
                    mb(r["total_bytes"]),
                    n0(r["n_live_tup"]),
                    n0(r["n_dead_tup"]),
                ]
            )
    return table(["backlog", "arm", "heap MB", "indexes MB", "total MB", "n_live_tup", "n_dead_tup"], rows)


def sent_table(agg):
    backlogs, clients, batches, arms = agg.axes("sent")
    if not backlogs:
        return None
    header = (
        ["backlog", "clients", "batch"]
        + [f"{a} jobs/s" for a in arms]
        + [f"E/{a}" for a in arms if a != "E"]
        + ["WAL bytes/job " + "/".join(arms)]
    )
    rows = []
    for b in backlogs:
        for c in clients:
            for bt in batches:
                vals = {a: agg.get("sent", b, c, bt, a) for a in arms}
                rows.append(
                    [bl(b), c, bt]
                    + [n0(vals[a]) for a in arms]
                    + [n2(ratio(vals.get("E"), vals[a])) for a in arms if a != "E"]
                    + [" / ".join(n0(agg.get("sent", b, c, bt, a, "wal_per_job")) for a in arms)]
                )
    return table(header, rows)


def sustained_section(runs):
    first = runs[0]
    text = [
        "## Sustained throughput and autovacuum\n",
        f"E alone, {first['seconds']:.0f} s without a VACUUM in between (the grid vacuums before every run), "
        f"{first['clients']} clients, batch {first['batch']}, {bl(first['backlog'])} backlog, once per "
        "`autovacuum_naptime`. Every claim leaves a dead entry "
        "in the pending index where the claim order starts; until a vacuum removes them, each claim steps over "
        "all of them, so throughput falls between vacuums and recovers after one. autovacuum starts at most "
        "once per naptime per database, whatever the table's own settings: the naptime sets the depth of "
        "the saw.\n",
    ]
    rows = []
    for r in runs:
        rows.append(
            [
                f"{r['naptime_s']} s",
                n0(r["cycles_per_s"]),
                n0(r["jobs_per_s"]),
                n0(r["first_interval"]),
                n0(r["min_interval"]),
                r["autovacuums"],
                " ".join(str(v) for v in r["intervals"]) or "–",
            ]
        )
    interval = f"{first['interval_s']:g}" if first.get("interval_s") else "?"
    text.append(
        table(
            [
                "autovacuum_naptime",
                "cycles/s (whole run)",
                "jobs/s",
                "first interval",
                "lowest interval",
                "autovacuums of the table",
                f"cycles/s per {interval}-s interval",
            ],
            rows,
        )
    )
    return "\n".join(text)


def write_report(rows, meta, agg, tg, plot_files, report_path):
    g = meta.get("grid", {})
    base = Path(report_path).resolve().parent  # image links relative to the report itself
    rel = lambda p: Path(os.path.relpath(Path(p).resolve(), base))  # noqa: E731
    lines = []
    mode = meta.get("mode", "?")
    lines.append(f"# sendjobs benchmark grid: run `{Path(report_path).resolve().parent.name}`\n")
    if mode != "full":
        lines.append(
            f"> **{mode.upper()} RUN** — a reduced grid with short runs, made while developing the "
            "harness on a shared machine. The numbers show the shape, not the truth; "
            "curate into BENCHMARKS.md only a full run (`bash bench/run.sh`) on a quiet machine.\n"
        )
    # Only the load before the first run says anything about other work: the 1-minute
    # load average at the end counts the benchmark's own last runs (the sustained ones).
    try:
        load_start = float(str(meta.get("loadavg_start", "0")).split()[0])
    except ValueError:
        load_start = 0.0
    cores = meta.get("nproc") or 1
    if load_start > 0.5 * cores:
        lines.append(
            f"> **Busy machine**: load average {load_start:.1f} on {cores} cores before the first "
            "run — other work shared the CPU and the disk with the benchmark, so differences "
            "between arms are mostly noise.\n"
        )
    method = rel(common.HERE / "README.md")
    lines.append(
        f"Written by `bench/run.sh` (the method: [bench/README.md]({method})). Every number is the "
        f"**median of {g.get('reps', '?')} run(s)** of {g.get('duration_s', '?')} s per grid point, "
        "arms interleaved; jobs/s counts jobs claimed and finalized.\n"
    )
    lines += common.header_lines(meta)
    lines.append(f"- estimated {common.fmt_dur(meta.get('estimate_s', 0))} for {meta.get('runs_planned', '?')} runs")
    lines.append("")
    lines.append(
        "Arms: **E** the extension's functions; **F** the floor, two single-row `UPDATE` transactions "
        "per cycle. One cycle = one claim transaction + one finalize transaction (`retry` with "
        "`retry_at = now()`, so the backlog never drains).\n"
    )
    if "M" in agg.axes("retry")[3]:
        lines.append(
            "**M** (a yardstick, not a competitor with the same guarantees): a minimal SQL queue on a "
            "copy of the same table — the claim's pending branch alone (`SELECT ... FOR UPDATE SKIP LOCKED` "
            "with a literal `LIMIT`, joined to one `UPDATE`), and a generation-fenced `UPDATE` back to "
            "pending; no "
            "expired-lease recovery, no per-claim results, no events, no attempt budget or backoff. "
            "It shows what any queue that updates an indexed row per claim pays over F.\n"
        )
    lines.append("## Targets\n")
    lines.append("Goals for the extension (not for the harness), judged on the medians above:\n")
    lines.append("```")
    for name, status, _detail in tg:
        lines.append(f"{status}  {name}")
    lines.append("```\n")
    for name, status, detail in tg:
        lines.append(f"- **{status}** {name}: {detail}")
    lines.append("")

    lines.append("## Throughput (retry cycle: the backlog never drains)\n")
    lines.append(
        "jobs/s per arm; E/x = E's jobs/s divided by x's (≥ 1 means E is faster). "
        "F does one single-row UPDATE per transaction, two per cycle, whatever the batch; "
        'its column is cycles/s (one "job" per cycle), so E/F at batch > 1 compares a batch '
        "cycle with a bare cycle.\n"
    )
    lines.append(throughput_table(agg) + "\n")
    for p in plot_files:
        lines.append(f"![{p.stem}]({rel(p)})\n")

    lines.append("## Latency per statement (pgbench -r, ms, client-observed, includes the commit)\n")
    lines.append("claim = the claim transaction; finalize = the finalize transaction.\n")
    lines.append(latency_table(agg) + "\n")
    lines.append("### Claim latency: largest vs smallest backlog\n")
    lines.append(backlog_latency_table(agg) + "\n")

    lines.append("## Write footprint per run (medians)\n")
    lines.append(
        "WAL bytes per job (`pg_current_wal_lsn()` difference over the run, divided by jobs; "
        "includes autovacuum and the checkpoint's full-page images); HOT % = "
        "`n_tup_hot_upd / n_tup_upd` during the run; dead tuples = `n_dead_tup` right after the "
        "run (each run starts right after a VACUUM); autovacuum runs = autovacuums and autoanalyzes of any "
        "table in the database that completed during the run. Cells are " + " / ".join(agg.axes("retry")[3]) + ".\n"
    )
    lines.append(footprint_table(agg) + "\n")
    lines.append(
        "The claim and the finalize of E and M cannot be HOT updates: both change `status`, which is in "
        "the predicate of every partial index, and an indexed column (`lease_expires_at`, "
        "`next_attempt_at`); so every cycle inserts index entries and leaves dead ones. F updates "
        "only `attempts` (not indexed) and is HOT. F's WAL per cycle at a large backlog is mostly "
        "full-page images: its random rows touch a new page after each checkpoint, while the claim "
        "ring walks the table in order.\n"
    )
    lines.append("Table size after the last run on each arm's table (heap, indexes, total incl. TOAST):\n")
    lines.append(size_table(agg) + "\n")

    st = sent_table(agg)
    if st:
        lines.append("## Terminal `sent` finalize (jobs re-enqueued)\n")
        lines.append(
            "Same cycle, but the finalize transaction marks the jobs `sent` (each finished with its "
            "event) and re-enqueues as many fresh jobs with one plain `INSERT`, so the pending backlog "
            "stays constant while the tables of finished jobs and events grow.\n"
        )
        lines.append(st + "\n")

    if meta.get("sustained"):
        lines.append(sustained_section(meta["sustained"]) + "\n")

    if agg.errors:
        lines.append("## Failed runs (left out of the medians)\n")
        lines.append(
            table(
                ["variant", "backlog", "clients", "batch", "arm", "rep", "error"],
                [
                    [
                        r["variant"],
                        bl(r["backlog"]),
                        r["clients"],
                        r["batch"],
                        r["arm"],
                        r["rep"],
                        r["error"].replace("|", "/"),
                    ]
                    for r in agg.errors
                ],
            )
            + "\n"
        )

    lines.append("## Machine and server\n")
    lines.append(f"- load average at the end: `{meta.get('loadavg_end', '?')}`")
    lines.append(f"- {meta.get('pg_version', '?')}; {meta.get('pgbench', '')}")
    lines.append("- `free -h`:\n\n```\n" + meta.get("free_h", "?") + "\n```")
    lines.append(
        "- server settings (throwaway cluster, loopback, its own port):\n\n```\n"
        + "\n".join(meta.get("settings", []))
        + "\n```"
    )
    if meta.get("settings_cli"):
        lines.append(f"- started with: `{meta['settings_cli']}`")
    lines.append(
        f"- payload: {meta.get('payload_text_bytes', '?')} bytes of JSON as text "
        f"({meta.get('payload_jsonb_bytes', '?')} as jsonb); max_attempts 2147483647; lease {g.get('lease', '?')}"
    )
    lines.append(
        f"- grid: backlogs {g.get('backlogs')}, clients {g.get('clients')}, batches {g.get('batches')}, "
        f"arms {g.get('arms')}, terminal variant {g.get('sent')}; VACUUM (ANALYZE) + CHECKPOINT "
        f"before each run: {g.get('vacuum_before_each_run')}"
    )
    lines.append(f"- data loads: {meta.get('load')}")
    lines.append(
        "- raw data, beside this report: `runs.csv` (one row per run), `sustained.csv`, `meta.json`, "
        "and `sql/` (the exact pgbench scripts and table copies that ran)"
    )
    lines.append("")
    report_path.write_text("\n".join(lines) + "\n")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", help="a run's folder, bench/results/<name>")
    a = ap.parse_args(argv)
    results = Path(a.results)
    rows, meta = load(results)
    agg = Agg(rows)
    tg = targets(agg)
    files = plots(agg, results, meta)
    report = results / "report.md"
    write_report(rows, meta, agg, tg, files, report)
    print("\n== throughput (jobs/s, medians)\n")
    print(throughput_table(agg))
    if agg.errors:
        print(f"\n== {len(agg.errors)} run(s) failed; see the report")
    print("\n== targets\n")
    for name, status, detail in tg:
        print(f"{status}  {name}\n      {detail}")
    print(f"\n== wrote {report} and {', '.join(f.name for f in files)} beside it")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
