"""The sendjobs chaos harness: the demo and the chaos soak, and everything they share.

    partner.py          the stand-in HTTP partner on 127.0.0.1 and its record of every send
    records.py          the harness's record of every call, the violations, the witness
                        tables (and the SQL that writes them), reading the database back
    workers.py          connections, the shared Context, the producer, the workers, the
                        late reconciler
    faults.py           fault injection (backend terminations, server crashes) and the
                        deliberately broken variants the checker must catch
    lifecycle.py        the soak's operator (cancel, redrive, purge while workers run) and
                        the finished jobs seeded before the run for the purge
    checker.py          the invariant checker: one function per invariant of docs/contract.md
    checker_selftest.py the checker's own test: one mutation of a clean run's records per check
    summary.py          the summary table both mains print
    soak.py             the chaos soak's main (scripts/soak.sh runs it)
    demo.py             the demo's main (scripts/demo.sh runs it)

The clusters come from tests/cluster.py. Run the mains from the repository root with
tests/ on the module path, with Debian's python (it has python3-psycopg2):

    PYTHONPATH=tests /usr/bin/python3 -B -m soak.soak --help
    PYTHONPATH=tests /usr/bin/python3 -B -m soak.demo --help

Only psycopg2 (Debian: python3-psycopg2) and the standard library are used.
"""

import importlib.util
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the work tree (-B covers this file too)

# Every module needs psycopg2: say so once, with the fix, rather than with a traceback.
if importlib.util.find_spec("psycopg2") is None:  # pragma: no cover
    sys.exit("needs psycopg2: apt-get install python3-psycopg2 and run /usr/bin/python3")
