"""An update changes no one's rights but as documented (tests/upgrade/scenario.sh, with
this release's files installed beside the previous release's).

    python3 tests/upgrade/rights.py FROM

In a new database at release FROM, roles with each access level (sendjobs_grant; 0.1.0
had none) and roles with grants made by hand; then each update of the path to the newest
release, one ALTER EXTENSION ... UPDATE TO a step. Before and after each step, every
role's privileges on every object of the extension (tests/upgrade/rights.sql); what a
step added and removed must be what the table "What an update changes in rights" of
docs/operations.md says, read from there. A privilege on an object the step removed goes
with it (the object's name is no longer there), and is not counted."""

import re
import sys
from pathlib import Path

import psycopg2

ROOT = Path(__file__).resolve().parents[2]
LEVELS = ["producer", "worker", "monitor", "admin"]
# Roles given part of a level, or a table, by hand: each keeps what it had and gets
# nothing new. At 0.1.0, PUBLIC may execute every function: a function granted by hand
# would change nothing there, so those roles start at 0.2.0.
BY_HAND = {
    "rights_by_hand_purge": ("0.2.0", "GRANT EXECUTE ON FUNCTION sendjobs_purge(interval, integer) TO {}"),
    "rights_by_hand_claim": ("0.2.0", "GRANT EXECUTE ON FUNCTION sendjobs_claim(integer, interval, text) TO {}"),
    "rights_by_hand_stats": ("0.2.0", "GRANT EXECUTE ON FUNCTION sendjobs_stats() TO {}"),
    "rights_by_hand_jobs": ("0.1.0", "GRANT SELECT ON TABLE send_jobs TO {}"),
    "rights_by_hand_queue": ("0.1.0", "GRANT SELECT (queue) ON TABLE send_jobs TO {}"),
    "rights_by_hand_events": ("0.1.0", "GRANT SELECT ON TABLE send_job_events TO {}"),
}


def version_key(version):
    return tuple(int(part) for part in version.split("."))


def documented():
    """The table of docs/operations.md: {(step, who): (gets, loses)}, each a set."""
    text = (ROOT / "docs/operations.md").read_text()
    section = text.split("### What an update changes in rights", 1)[1].split("\n#", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) != 4 or cells[0] in ("update", "---"):
            continue
        step = tuple(re.findall(r"\d+\.\d+\.\d+", cells[0]))
        gets, loses = (set(re.findall(r"`([^`]+)`", cell)) for cell in cells[2:])
        for who in cells[1].split(","):
            key = (step, who.strip())
            if key in rows:
                sys.exit(f"rights: docs/operations.md names {key} twice")
            rows[key] = (gets, loses)
    return rows


def privileges(cur):
    """{role: set of privileges}, and the set of every privilege there is ('-')."""
    cur.execute((ROOT / "tests/upgrade/rights.sql").read_text())
    held, lines = {}, cur.fetchall()
    for role, privilege in lines:
        held.setdefault(role, set()).add(privilege)
    every = [privilege for role, privilege in lines if role == "-"]
    twice = {p for p in every if every.count(p) > 1}
    if twice:
        sys.exit(f"rights: two functions of the extension share a name: {sorted(twice)}")
    return held, held.pop("-")


def main():
    version_from = sys.argv[1]
    conn = psycopg2.connect(dbname="postgres")
    conn.autocommit = True
    conn.cursor().execute("CREATE DATABASE rights")
    conn.close()
    conn = psycopg2.connect(dbname="rights")
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("CREATE EXTENSION sendjobs VERSION %s", (version_from,))

    tags = {"rights_none": "no grant"}
    if version_from != "0.1.0":
        for level in LEVELS:
            cur.execute(f"CREATE ROLE rights_{level}")
            cur.execute("SELECT sendjobs_grant(%s, %s)", (f"rights_{level}", level))
            tags[f"rights_{level}"] = level
    for role, (since, grant) in BY_HAND.items():
        if version_key(version_from) >= version_key(since):
            cur.execute(f"CREATE ROLE {role}")
            cur.execute(grant.format(role))
            tags[role] = "by hand"
    cur.execute("CREATE ROLE rights_none")

    cur.execute(
        "SELECT path FROM pg_extension_update_paths('sendjobs') WHERE source = %s"
        " AND target = (SELECT default_version FROM pg_available_extensions WHERE name = 'sendjobs')",
        (version_from,),
    )
    path = cur.fetchone()[0].split("--")
    doc = documented()
    failures = []
    for step in zip(path, path[1:]):
        before, _ = privileges(cur)
        cur.execute("ALTER EXTENSION sendjobs UPDATE TO %s", (step[1],))
        after, every = privileges(cur)
        for role, tag in sorted(tags.items()):
            rows = [doc[key] for key in ((step, tag), (step, "every role")) if key in doc]
            if not rows:
                failures.append(f"{step[0]} -> {step[1]}: docs/operations.md has no row for {tag}")
                continue
            gets = set().union(*(row[0] for row in rows))
            loses = set().union(*(row[1] for row in rows))
            had, has = before.get(role, set()), after.get(role, set())
            added, removed = has - had, (had - has) & every
            if added != gets or removed != loses & had:
                failures.append(
                    f"{step[0]} -> {step[1]}: {role} ({tag}) got {sorted(added)} and lost"
                    f" {sorted(removed)}; documented: gets {sorted(gets)}, loses {sorted(loses & had)}"
                )
        if not failures:
            print(f"update {step[0]} -> {step[1]}: the rights of {len(tags)} roles changed as documented")
    cur.execute("DROP OWNED BY " + ", ".join(tags))
    cur.execute("DROP ROLE " + ", ".join(tags))
    conn.close()
    if failures:
        print("\n".join(["upgrade: rights changed other than docs/operations.md says"] + failures))
        sys.exit(1)


main()
