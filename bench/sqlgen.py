"""The SQL of the benchmark arms, derived from the extension's own statement files.

S and P must run *the statements the extension runs*. Rather than keeping hand copies
that drift, they are read at run time from the files the extension compiles in,
sql/statements/*.sql (src/statements.rs embeds each with include_str!), with the same
rule for the variants a file holds (variant_text()). Each statement file is checked
byte for byte against the installed sendjobs.so (check_against_so()): the report says
whether S/P ran the same text as the .so that E ran.

Only the parameters are replaced:
  S  $1 (the clock)   -> a MATERIALIZED CTE `clock` holding clock_timestamp(), read once
     NULL parameters  -> typed NULL literals (pgbench variables cannot be NULL)
     the others       -> pgbench variables, i.e. parameters of `pgbench -M prepared`
     the claim's final `SELECT job, gave_up, ... FROM claimed ...` -> two arrays (ids,
     generations) of the jobs claimed (not of those that gave up)
     so that pgbench can \\gset them (E and P aggregate the same way in the script).
  P  $n               -> PL/pgSQL variables (PL/pgSQL passes them as parameters of a
     cached plan, as SPI does for the extension); the claim's final SELECT expands the
     row, `SELECT (job).* ...`, because RETURN QUERY needs the row's columns.
The tables of S/P/F are catalog copies of E's tables (copy_tables_sql()).
The control flow around the statements (argument checks, result loop, the stamp) is a
hand translation of the Rust into PL/pgSQL: see p_functions().
"""

import re
from pathlib import Path

# --------------------------------------------------------------------------------------
# The statements, from sql/statements/

STATEMENT_DIR = "sql/statements"

# The statements S and P run: name (as in src/statements.rs) -> (file, variant or None).
# The same mapping as src/statements.rs, kept here by hand (this module reads no Rust).
STATEMENTS = {
    "CLAIM_ANY_QUEUE": ("claim.sql", "any_queue"),
    "CLAIM_ONE_QUEUE": ("claim.sql", "one_queue"),
    "FINALIZE_BATCH": ("finalize.sql", "batch"),
    "FINALIZE_ONE": ("finalize.sql", "one"),
    "LINK_CURRENT": ("link_current.sql", None),
}


def variant_text(text, wanted, path="a statement file"):
    """The text of variant `wanted` (None: a file without variants) of a statement file,
    without comment lines: src/statements.rs `variant()`, line for line. The lines after
    `--- variant NAME` belong to NAME only, up to the next `--- variant` or `--- end`
    (any other `--- ` line ends a variant too); every other line belongs to all
    variants; full-line comments (`--` after optional indentation) and blank lines are
    dropped; the lines kept keep their indentation and end with a newline."""
    keep = True
    found = wanted is None
    out = []
    lines = text.split("\n")
    if lines and lines[-1] == "":   # Rust's str::lines(): no empty last line, "\r\n" too
        lines.pop()
    for line in lines:
        if line.endswith("\r"):
            line = line[:-1]
        code = line.lstrip()
        if code.startswith("--- "):
            marker = code[len("--- "):].strip()
            if marker.startswith("variant "):
                keep = marker[len("variant "):].strip() == wanted
                found = found or keep
            else:   # `--- end`
                keep = True
        elif keep and code and not code.startswith("--"):
            out.append(line + "\n")
    if not found:
        raise SystemExit(f"bench: no variant {wanted!r} in {path}")
    return "".join(out)


def read_statements(repo):
    """{name: text} of STATEMENTS, `@extschema@` left in, with the checks that the
    shapes this harness mirrors (S's binds, P's hand-translated control flow) still hold."""
    repo = Path(repo)
    st = {}
    for name, (file, variant) in STATEMENTS.items():
        path = repo / STATEMENT_DIR / file
        try:
            text = path.read_text()
        except OSError as e:
            raise SystemExit(f"bench: cannot read {path}: {e}")
        st[name] = variant_text(text, variant, f"{STATEMENT_DIR}/{file}")
    # The extension runs FINALIZE_ONE for a batch of one, FINALIZE_BATCH for more; P and
    # S choose the same way. (A text check of src/finalize.rs, not a parse of it.)
    if "claims.len() == 1" not in (repo / "src/finalize.rs").read_text():
        raise SystemExit("bench: src/finalize.rs no longer picks FINALIZE_ONE for one claim; "
                         "update p_functions()/script_s()")
    for name in ("FINALIZE_BATCH", "FINALIZE_ONE"):
        if "$1::int8[]" not in st[name]:
            raise SystemExit(f"bench: {name} ({STATEMENT_DIR}/finalize.sql) no longer takes $1::int8[]; "
                             "update p_functions()/script_s()")
    if re.search(r"\$\d", _strip_literals(st["LINK_CURRENT"])):
        raise SystemExit(f"bench: LINK_CURRENT ({STATEMENT_DIR}/link_current.sql) takes parameters now; "
                         "update p_functions()")
    for k in ("CLAIM_ANY_QUEUE", "CLAIM_ONE_QUEUE"):
        if not st[k].rstrip().endswith(CLAIM_TAIL):
            raise SystemExit(f"bench: {k} ({STATEMENT_DIR}/claim.sql) no longer ends with "
                             f"`{CLAIM_TAIL}`; update sqlgen.py")
    return st


def statement_files(repo):
    """Every statement file the extension compiles in, sorted: [(name, path)]."""
    return [(p.name, p) for p in sorted((Path(repo) / STATEMENT_DIR).glob("*.sql"))]


def check_against_so(repo, so_path):
    """{file name: True/False (None: no .so)} for every file of sql/statements/: is its
    full text, byte for byte, in the installed .so? The extension embeds each file
    verbatim (include_str!) and cuts its variants at run time, so the file, not a
    variant's text, is what a .so built from this tree holds."""
    files = statement_files(repo)
    try:
        data = Path(so_path).read_bytes()
    except OSError:
        return {name: None for name, _ in files}
    return {name: (path.read_bytes() in data) for name, path in files}


def files_of(names):
    """The statement files the statements `names` come from (those S and P run)."""
    return sorted({STATEMENTS[n][0] for n in names})


# --------------------------------------------------------------------------------------
# Substitution helpers


def _strip_literals(sql):
    return re.sub(r"'(?:[^']|'')*'", "''", sql)


def subst(sql, mapping):
    """Replace $n placeholders (whole numbers only: $1 never matches inside $10), outside
    of '...' literals."""

    def rep(m):
        n = int(m.group(1))
        if n not in mapping:
            raise SystemExit(f"bench: no substitution for ${n} in:\n{sql}")
        return mapping[n]

    parts = re.split(r"('(?:[^']|'')*')", sql)
    return "".join(p if i % 2 else re.sub(r"\$(\d+)(?!\d)", rep, p) for i, p in enumerate(parts))


def with_schema(sql, schema):
    return sql.replace("@extschema@", schema)


def add_clock_cte(sql):
    """Prefix a MATERIALIZED CTE that reads the wall clock once: `clock(now)`."""
    m = re.match(r"\s*WITH\s+", sql, re.I)   # "WITH\n" too (finalize.sql)
    if not m:
        raise SystemExit("bench: expected a statement starting with WITH")
    return ("WITH clock AS MATERIALIZED (SELECT pg_catalog.clock_timestamp() AS now),\n"
            + sql[m.end():])


CLOCK = "(SELECT clock.now FROM clock)"
CLAIM_TAIL = ("SELECT job, false AS gave_up, id, transaction_id, next_attempt_at FROM claimed\n"
              "UNION ALL\n"
              "SELECT NULL, true, id, transaction_id, next_attempt_at FROM gave_up\n"
              "ORDER BY next_attempt_at, id")


# The tables of S, P and F are copies of the tables the extension created for E (so they
# are the DDL of sql/schema.sql as installed, whatever the source tree holds now):
# LIKE ... INCLUDING ALL copies columns, defaults, identity, CHECK constraints, indexes
# (partial ones too), storage and comments; reloptions (fillfactor) and foreign keys are
# copied from the catalog; the child tables (send_jobs_finished) inherit their parent again.
EXT_TABLES = ("send_jobs", "send_jobs_finished", "send_job_keys", "send_job_events",
              "sendjobs_transaction_link")


def copy_tables_sql(cur, src, dst):
    out = [f"CREATE SCHEMA {dst};"]
    for t in EXT_TABLES:
        out.append(f"CREATE TABLE {dst}.{t} (LIKE {src}.{t} INCLUDING ALL);")
        cur.execute("SELECT array_to_string(reloptions, ', ') FROM pg_class WHERE oid = %s::regclass",
                    (f"{src}.{t}",))
        opts = cur.fetchone()[0]
        if opts:
            out.append(f"ALTER TABLE {dst}.{t} SET ({opts});")
    for t in EXT_TABLES:
        cur.execute("SELECT inhparent::regclass::text FROM pg_inherits WHERE inhrelid = %s::regclass",
                    (f"{src}.{t}",))
        for (parent,) in cur.fetchall():
            out.append(f"ALTER TABLE {dst}.{t} INHERIT {dst}.{parent.split('.')[-1]};")
    for t in EXT_TABLES:
        cur.execute("SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
                    "WHERE conrelid = %s::regclass AND contype = 'f' ORDER BY conname", (f"{src}.{t}",))
        for name, definition in cur.fetchall():
            definition = re.sub(r"REFERENCES (\w+\.)?", f"REFERENCES {dst}.", definition)
            out.append(f"ALTER TABLE {dst}.{t} ADD CONSTRAINT {name} {definition};")
    cur.execute("SELECT tgrelid::regclass::text, tgname FROM pg_trigger WHERE NOT tgisinternal "
                "AND tgrelid = ANY (%s::regclass[])", ([f"{src}.{t}" for t in EXT_TABLES],))
    triggers = cur.fetchall()
    return "\n".join(out) + "\n", triggers


# --------------------------------------------------------------------------------------
# P: the same logic in PL/pgSQL


def p_functions(st, s):
    claim_map = {1: "v_now", 2: "v_batch", 3: "v_lease", 4: "p_queue"}

    def claim(key):
        body = subst(with_schema(st[key], s), claim_map).rstrip()
        assert body.endswith(CLAIM_TAIL)
        # Jobs that gave up are not returned. P does not translate the give-up's rounds
        # and stamps: in the benchmark no lease expires, so no job gives up.
        return body[: -len(CLAIM_TAIL)] + "SELECT (job).* FROM claimed ORDER BY next_attempt_at, id"

    def fin(key):
        return subst(with_schema(st[key], s), {
            1: "p_ids", 2: "p_generations", 3: "p_outcome", 4: "v_now", 5: "p_retry_at",
            6: "v_backoff_base", 7: "v_backoff_max", 8: "p_error"}).rstrip()

    def fin_loop(key):   # the Rust result loop of finalize(), once per statement
        return f"""        FOR v_id, v_status, v_txn, v_known IN
{fin(key)}
        LOOP
            IF v_known IS DISTINCT FROM true THEN
                RAISE EXCEPTION 'job % does not exist', v_id USING ERRCODE = 'P0002';
            END IF;
            id := v_id;
            IF v_status IS NULL THEN
                result := 'stale';
            ELSE
                IF v_txn IS NOT NULL AND v_status IN ('sent', 'failed') THEN
                    v_stamp_status := v_stamp_status || v_status;
                    v_stamp_txn := v_stamp_txn || v_txn;
                END IF;
                result := 'applied';
            END IF;
            RETURN NEXT;
        END LOOP;"""

    stamp = with_schema(st["LINK_CURRENT"], s).rstrip()
    # GUCs: the extension reads its own (registered when its library is loaded). A
    # backend that never loaded sendjobs.so has no such setting: current_setting(.., true)
    # gives NULL and the extension's documented default applies.
    return f"""
-- P: sendjobs_claim in PL/pgSQL (src/claim.rs: claim()).
CREATE FUNCTION {s}.sendjobs_claim(p_batch int DEFAULT 1, p_lease interval DEFAULT NULL,
                                   p_queue text DEFAULT NULL)
RETURNS SETOF {s}.send_jobs
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $fn$
DECLARE
    v_max   int := coalesce(current_setting('sendjobs.max_batch', true)::int, 1000);
    v_lease interval := p_lease;
    v_batch bigint;
    v_now   timestamptz;
BEGIN
    IF p_batch IS NULL THEN
        RAISE EXCEPTION 'batch must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF p_batch < 1 OR p_batch > v_max THEN
        RAISE EXCEPTION 'batch must be between 1 and % (sendjobs.max_batch), got %', v_max, p_batch
              USING ERRCODE = '22023';
    END IF;
    IF v_lease IS NULL THEN
        v_lease := coalesce(current_setting('sendjobs.default_lease', true), '90s')::interval;
    END IF;
    IF v_lease < interval '0' THEN
        RAISE EXCEPTION 'lease must not be negative' USING ERRCODE = '22023';
    END IF;
    v_batch := p_batch;
    v_now := clock_timestamp();   -- the wall clock, read once per call (src/clock.rs)
    IF p_queue IS NULL THEN
        RETURN QUERY
{claim("CLAIM_ANY_QUEUE")};
    ELSE
        RETURN QUERY
{claim("CLAIM_ONE_QUEUE")};
    END IF;
END
$fn$;

-- P: sendjobs_finalize_batch in PL/pgSQL (src/finalize.rs: batch_claims() + finalize()).
CREATE FUNCTION {s}.sendjobs_finalize_batch(p_ids bigint[], p_generations bigint[], p_outcome text,
                                            p_error text DEFAULT NULL,
                                            p_retry_at timestamptz DEFAULT NULL)
RETURNS TABLE (id bigint, result text)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $fn$
#variable_conflict use_column
DECLARE
    v_now          timestamptz;
    v_backoff_base float8;
    v_backoff_max  float8;
    v_null_ids     bigint;
    v_distinct_ids bigint;
    v_null_gens    bigint;
    v_neg_gens     bigint;
    v_id           bigint;
    v_status       text;
    v_txn          text;
    v_known        boolean;
    v_stamp_status text[] := '{{}}';
    v_stamp_txn    text[] := '{{}}';
    v_stamp_sql    text;
    v_on_sent      text;
    v_on_failed    text;
    v_table        text;
    v_missing      text;
BEGIN
    IF p_ids IS NULL THEN
        RAISE EXCEPTION 'ids must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF p_generations IS NULL THEN
        RAISE EXCEPTION 'generations must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF cardinality(p_ids) <> cardinality(p_generations) THEN
        RAISE EXCEPTION 'ids and generations must have the same length, got % and %',
              cardinality(p_ids), cardinality(p_generations) USING ERRCODE = '22023';
    END IF;
    SELECT count(*) FILTER (WHERE u.i IS NULL), count(DISTINCT u.i),
           count(*) FILTER (WHERE u.g IS NULL), count(*) FILTER (WHERE u.g < 0)
      INTO v_null_ids, v_distinct_ids, v_null_gens, v_neg_gens
      FROM unnest(p_ids, p_generations) AS u(i, g);
    IF v_null_ids > 0 THEN
        RAISE EXCEPTION 'an element of ids must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF v_distinct_ids <> cardinality(p_ids) THEN
        RAISE EXCEPTION 'a job appears twice in ids' USING ERRCODE = '22023';
    END IF;
    IF v_null_gens > 0 THEN
        RAISE EXCEPTION 'generation must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF v_neg_gens > 0 THEN
        RAISE EXCEPTION 'generation must not be negative' USING ERRCODE = '22023';
    END IF;
    IF p_outcome IS NULL THEN
        RAISE EXCEPTION 'outcome must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF p_outcome NOT IN ('sent', 'failed', 'retry') THEN
        RAISE EXCEPTION 'unknown outcome %', p_outcome USING ERRCODE = '22023';
    END IF;
    IF p_retry_at IS NOT NULL AND p_outcome <> 'retry' THEN
        RAISE EXCEPTION 'retry_at is only accepted with outcome ''retry''' USING ERRCODE = '22023';
    END IF;
    IF p_error IS NOT NULL AND p_outcome = 'sent' THEN
        RAISE EXCEPTION 'error is only accepted with outcome ''failed'' or ''retry''' USING ERRCODE = '22023';
    END IF;
    IF cardinality(p_ids) = 0 THEN
        RETURN;
    END IF;
    v_now := clock_timestamp();   -- the wall clock, read once per call (src/clock.rs)
    v_backoff_base := coalesce(extract(epoch FROM current_setting('sendjobs.retry_backoff_base', true)::interval) * 1000, 10000);
    v_backoff_max := coalesce(extract(epoch FROM current_setting('sendjobs.retry_backoff_max', true)::interval) * 1000, 3600000);

    IF cardinality(p_ids) = 1 THEN   -- src/finalize.rs: one claim, FINALIZE_ONE
{fin_loop("FINALIZE_ONE")}
    ELSE
{fin_loop("FINALIZE_BATCH")}
    END IF;

    IF cardinality(v_stamp_txn) > 0 THEN   -- src/link.rs: TransactionLink::current + stamp
        FOR v_stamp_sql, v_on_sent, v_on_failed, v_table, v_missing IN
{stamp}
        LOOP
            IF v_missing IS NOT NULL THEN
                RAISE EXCEPTION 'column % of % does not exist', v_missing, v_table USING ERRCODE = '42703';
            END IF;
            FOR i IN 1 .. cardinality(v_stamp_txn) LOOP
                EXECUTE v_stamp_sql USING CASE WHEN v_stamp_status[i] = 'sent' THEN v_on_sent ELSE v_on_failed END,
                                          v_stamp_txn[i];
            END LOOP;
            EXIT;
        END LOOP;
    END IF;
END
$fn$;

-- P: sendjobs_finalize (one claim), as the extension's wrapper does it.
CREATE FUNCTION {s}.sendjobs_finalize(p_id bigint, p_generation bigint, p_outcome text,
                                      p_error text DEFAULT NULL, p_retry_at timestamptz DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $fn$
DECLARE
    v_result text;
BEGIN
    IF p_id IS NULL THEN
        RAISE EXCEPTION 'id must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF p_generation IS NULL THEN
        RAISE EXCEPTION 'generation must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF p_generation < 0 THEN
        RAISE EXCEPTION 'generation must not be negative' USING ERRCODE = '22023';
    END IF;
    SELECT f.result INTO v_result
      FROM {s}.sendjobs_finalize_batch(ARRAY[p_id], ARRAY[p_generation], p_outcome, p_error, p_retry_at) AS f;
    RETURN coalesce(v_result, 'stale');
END
$fn$;
"""


# --------------------------------------------------------------------------------------
# pgbench scripts. One script iteration = one claim transaction + one finalize
# transaction (the sent variant re-enqueues inside the finalize transaction).


def _reenqueue(schema):
    return (f"INSERT INTO {schema}.send_jobs (payload, max_attempts) "
            f"SELECT :payload::jsonb, 2147483647 FROM generate_series(1, cardinality(:ids::int8[]));\n")


def script_fn(schema, variant, single=False):
    """E (schema = the extension's) and P (schema = the PL/pgSQL copy): the functions."""
    claim = (f"SELECT coalesce(array_agg(id), '{{}}') AS ids, "
             f"coalesce(array_agg(claim_generation), '{{}}') AS gens "
             f"FROM {schema}.sendjobs_claim(:batch, :lease) \\gset\n")
    retry_at = ", NULL, now()" if variant == "retry" else ""
    if single:   # one sendjobs_finalize call per job, in one statement
        fin = (f"SELECT u.id, {schema}.sendjobs_finalize(u.id, u.gen, :outcome{retry_at}) AS result "
               f"FROM unnest(:ids::int8[], :gens::int8[]) AS u(id, gen);\n")
    else:   # the rows come back to the client, as S's statement returns its rows
        fin = (f"SELECT id, result FROM {schema}.sendjobs_finalize_batch(:ids, :gens, "
               f":outcome{retry_at});\n")
    if variant == "retry":
        return claim + fin
    return claim + "BEGIN;\n" + fin + _reenqueue(schema) + "COMMIT;\n"


def _one_line(sql):
    """pgbench reads one SQL command per line unless it ends with ';' - join the lines."""
    return " ".join(l.strip() for l in sql.strip().splitlines() if l.strip())


def script_s(st, schema, variant):
    """S: the extension's statements, bound by the client (pgbench -M prepared)."""
    claim = add_clock_cte(subst(with_schema(st["CLAIM_ANY_QUEUE"], schema), {
        1: CLOCK, 2: ":batch", 3: ":lease", 4: "NULL"})).rstrip()
    assert claim.endswith(CLAIM_TAIL)
    claim = claim[: -len(CLAIM_TAIL)] + (
        "SELECT coalesce(array_agg(id ORDER BY next_attempt_at, id), '{}') AS ids, "
        "coalesce(array_agg((job).claim_generation ORDER BY next_attempt_at, id), '{}') AS gens "
        "FROM claimed")
    def fin(key):
        return _one_line(add_clock_cte(subst(with_schema(st[key], schema), {
            1: ":ids", 2: ":gens", 3: ":outcome", 4: CLOCK,
            5: "now()" if variant == "retry" else "NULL::timestamptz",
            6: ":backoff_base", 7: ":backoff_max", 8: "NULL::text"}))) + ";\n"
    # As the extension does: FINALIZE_ONE for one claim, FINALIZE_BATCH for more.
    fin = "\\if :batch = 1\n" + fin("FINALIZE_ONE") + "\\else\n" + fin("FINALIZE_BATCH") + "\\endif\n"
    out = _one_line(claim) + " \\gset\n"
    if variant == "retry":
        return out + fin
    return out + "BEGIN;\n" + fin + _reenqueue(schema) + "COMMIT;\n"


def script_m(schema, batch):
    """M, a minimal SQL queue on the same table: the claim's pending branch alone (no
    expired-lease recovery), a generation-fenced `retry` back to pending (no results per
    claim, no events, no attempt budget or backoff). Not the contract; a yardstick for
    what the contract's extras cost. The batch is a literal, as a worker with a fixed batch
    would write it: with `LIMIT $n` the server re-plans the claim on every call (its
    generic plan, costed for a LIMIT it cannot see, is a bad one), which M should not pay."""
    claim = (f"WITH picked AS MATERIALIZED (SELECT id FROM {schema}.send_jobs WHERE status = 'pending' "
             f"AND next_attempt_at <= now() ORDER BY next_attempt_at, id LIMIT {int(batch)} FOR UPDATE SKIP LOCKED), "
             f"claimed AS (UPDATE {schema}.send_jobs AS job SET status = 'in_flight', "
             "attempts = job.attempts + 1, claimed_at = now(), "
             "lease_expires_at = now() + :lease::interval, claim_generation = job.claim_generation + 1 "
             "FROM picked WHERE job.id = picked.id RETURNING job.id, job.claim_generation) "
             "SELECT coalesce(array_agg(id), '{}') AS ids, coalesce(array_agg(claim_generation), '{}') AS gens "
             "FROM claimed \\gset\n")
    # The claims: one pair for a batch of one (the finalize then plans once, as the claim
    # does), the arrays joined for more.
    fence = ("WHERE job.id = (:ids::int8[])[1] AND job.claim_generation = (:gens::int8[])[1]" if batch == 1 else
             "FROM unnest(:ids::int8[], :gens::int8[]) AS c(id, generation) "
             "WHERE job.id = c.id AND job.claim_generation = c.generation")
    fin = (f"UPDATE {schema}.send_jobs AS job SET status = 'pending', next_attempt_at = now(), "
           f"lease_expires_at = NULL {fence} AND job.status = 'in_flight';\n")
    return claim + fin


def script_f(schema):
    """F, the floor: two single-row UPDATE transactions (two commits, two round trips)."""
    return ("\\set id1 random(1, :backlog)\n"
            "\\set id2 random(1, :backlog)\n"
            f"UPDATE {schema}.send_jobs SET attempts = attempts + 1 WHERE id = :id1;\n"
            f"UPDATE {schema}.send_jobs SET attempts = attempts + 1 WHERE id = :id2;\n")
