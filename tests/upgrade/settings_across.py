"""A session that lives through the update (tests/upgrade/scenario.sh, from 0.1.0): it
loaded 0.1.0's library, which let any role set sendjobs.max_batch, and set it high; after
ALTER EXTENSION sendjobs UPDATE the same session calls 0.2.1's library, which reads the
settings 0.1.0 defined (src/machinery/config.rs) but takes a superuser-only limit only where it is
stricter than its own default: the claim of 5,000 is refused (22023), as in a new session.

    python3 tests/upgrade/settings_across.py before | after
Run "before" in the window and keep it running; it waits for "after" on stdin."""

import sys

import psycopg2

conn = psycopg2.connect(dbname="upgrade", user="window_worker")
conn.autocommit = True
cur = conn.cursor()
try:  # any call loads 0.1.0's library; this one is refused for want of table privileges
    cur.execute("SELECT sendjobs_heartbeat(0, 0)")
except psycopg2.Error:
    pass
cur.execute("SET sendjobs.max_batch = 100000")  # 0.1.0: anyone may
print("set under 0.1.0", flush=True)
sys.stdin.readline()  # the update runs meanwhile
try:
    cur.execute("SELECT count(*) FROM sendjobs_claim(5000, '1 minute', 'nothing-here')")
    print(f"upgrade: a limit set under 0.1.0's library let a claim of 5000 through ({cur.fetchone()[0]})")
    sys.exit(1)
except psycopg2.Error as e:
    if e.pgcode != "22023":
        print(f"upgrade: the claim of 5000 failed with {e.pgcode}, not 22023: {e}")
        sys.exit(1)
print("a limit set under 0.1.0's library is not taken by 0.2.1's")
