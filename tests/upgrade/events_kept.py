"""What users put on the table send_job_events, which 0.3.0 makes a view, stops the update
(tests/upgrade/scenario.sh, with this release's files installed beside the previous
release's): the update refuses (55000) naming each of them and changes nothing, while one
is left; with none left it runs, and a plain SELECT on the table is carried to the view.

    python3 tests/upgrade/events_kept.py FROM"""

import sys
from pathlib import Path

import psycopg2

ROOT = Path(__file__).resolve().parents[2]
# What is put on the table, what the refusal names it, and how it is taken off again.
KEPT = [
    (
        "CREATE FUNCTION kept_audit() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NULL; END';"
        " CREATE TRIGGER kept_audit AFTER INSERT ON send_job_events FOR EACH ROW EXECUTE FUNCTION kept_audit()",
        "trigger kept_audit",
        "DROP TRIGGER kept_audit ON send_job_events",
    ),
    (
        "ALTER TABLE send_job_events ENABLE ROW LEVEL SECURITY",
        "row-level security",
        "ALTER TABLE send_job_events DISABLE ROW LEVEL SECURITY",
    ),
    (
        "CREATE POLICY kept_own_queue ON send_job_events FOR SELECT TO kept_monitor USING (kind = 'sent')",
        "policy kept_own_queue",
        "DROP POLICY kept_own_queue ON send_job_events",
    ),
    (
        "CREATE PUBLICATION kept_events FOR TABLE send_job_events",
        "publication kept_events",
        "DROP PUBLICATION kept_events",
    ),
    (
        "GRANT SELECT (kind) ON send_job_events TO kept_reader",
        "SELECT (kind) granted to kept_reader",
        "REVOKE SELECT (kind) ON send_job_events FROM kept_reader",
    ),
    (
        "GRANT INSERT ON send_job_events TO kept_reader",
        "INSERT granted to kept_reader",
        "REVOKE INSERT ON send_job_events FROM kept_reader",
    ),
    ("CREATE INDEX kept_kind_idx ON send_job_events (kind)", "index kept_kind_idx", "DROP INDEX kept_kind_idx"),
    (
        "CREATE RULE kept_rule AS ON DELETE TO send_job_events DO ALSO NOTIFY kept",
        "rule kept_rule",
        "DROP RULE kept_rule ON send_job_events",
    ),
]


def catalog(cur):
    """tests/upgrade/catalog.sql's lines (what the extension put in the database)."""
    sql = "\n".join(
        line for line in (ROOT / "tests/upgrade/catalog.sql").read_text().splitlines() if not line.startswith("\\")
    )
    cur.execute(sql)
    return cur.fetchall()


def main():
    version_from = sys.argv[1]
    conn = psycopg2.connect(dbname="postgres")
    conn.autocommit = True
    conn.cursor().execute("CREATE DATABASE kept")
    conn.close()
    conn = psycopg2.connect(dbname="kept")
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("CREATE EXTENSION sendjobs VERSION %s", (version_from,))
    cur.execute("CREATE ROLE kept_monitor; CREATE ROLE kept_reader; CREATE ROLE kept_plain")
    cur.execute("GRANT SELECT ON send_job_events TO kept_monitor, kept_plain")
    for make, _, _ in KEPT:
        cur.execute(make)
    cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'sendjobs'")
    version = cur.fetchone()[0]

    for i in range(len(KEPT)):
        named = [name for _, name, _ in KEPT[i:]]
        before = catalog(cur)
        try:
            cur.execute("ALTER EXTENSION sendjobs UPDATE")
            sys.exit(f"upgrade: the update ran over {', '.join(named)} on send_job_events")
        except psycopg2.Error as e:
            message = e.diag.message_primary or ""
            if e.pgcode != "55000" or not e.diag.message_hint:
                sys.exit(f"upgrade: the update refused with {e.pgcode}, not 55000 and a hint: {e}")
            said = sorted(message.split(": ", 1)[1].split(", ")) if ": " in message else []
            if said != sorted(named):
                sys.exit(f"upgrade: the refusal named {said}, not {sorted(named)}: {message}")
        cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'sendjobs'")
        if cur.fetchone()[0] != version or catalog(cur) != before:
            sys.exit("upgrade: the refused update changed the catalog")
        cur.execute(KEPT[i][2])
    print(
        f"the update from {version_from} refuses, changing nothing, while any of {len(KEPT)} things"
        " is on send_job_events, and names each"
    )

    cur.execute("ALTER EXTENSION sendjobs UPDATE")
    cur.execute(
        "SELECT has_table_privilege('kept_plain', 'send_job_events', 'SELECT'),"
        " has_table_privilege('kept_reader', 'send_job_events', 'SELECT'),"
        " has_column_privilege('kept_reader', 'send_job_events', 'kind', 'SELECT')"
    )
    if cur.fetchone() != (True, False, False):
        sys.exit("upgrade: a SELECT on the table send_job_events was not carried to the view as it was")
    print("with none left it runs, and a SELECT on the table is carried to the view")
    cur.execute("DROP OWNED BY kept_monitor, kept_reader, kept_plain")
    cur.execute("DROP ROLE kept_monitor, kept_reader, kept_plain")
    conn.close()


main()
