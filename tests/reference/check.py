"""docs/reference.md cannot drift: this runs every example of it and checks that it covers
every function, setting and SQLSTATE of the extension. And the README's Quick look runs as
pasted.

Every ```sql block of the reference runs, in order, in one psql session on a fresh
database of the cluster named by PGHOST/PGPORT (scripts/test.sh starts a throwaway one);
the ```text block right after it must be exactly what psql printed. Then:

  * every function of the extension that is not internal has a "### `name(" heading;
  * every table of the extension is in the Tables example;
  * every setting `sendjobs.*` the library defines is named;
  * every SQLSTATE in src/machinery/errors.rs is named;
  * every page of docs/ and every decision record is linked from docs/README.md, the index;
  * every function's entry ends with its trail (code, statements, invariants, tests);
  * what the README says of the invariants' count is the contract's;
  * every file of src/ is named in docs/architecture.md, the map;
  * no file of src/ imports another in a circle, and none imports a room above its own
    (the machinery, the guards, flow control, the verbs: docs/architecture.md);
  * every path docs/contract.md, docs/reference.md and docs/architecture.md cite exists
    (and a `file::name`, the function it names).
  * BENCHMARKS.md, the current figures, stays under 25,000 bytes (older runs go to the
    decision records, under "Measurements");
  * every relative link of the repository's pages to a page exists, and its #anchor is a
    heading of that page;
  * sql/statements/ holds at most 0.25 comment lines per line of SQL, and no comment block
    (a file's header, a variant's) of more than 15 lines: the figures live in the
    decision records.

First, the ```sql blocks of the README's "## Quick look" section run the same way, in
order, in one psql session as a superuser on a fresh database of their own: each must
print no ERROR, and one followed by a ```text block must print exactly that. The roles
it creates are dropped afterwards (and before, should an earlier run have left them),
so that the reference's own roles can be created next.

    python3 tests/reference/check.py            # check
    python3 tests/reference/check.py --update   # write psql's output into both pages
    python3 tests/reference/check.py --static   # only what needs no server: the index, the
                                                # map, counts, trails, paths, links, imports
"""

import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
REFERENCE = os.path.join(ROOT, "docs", "reference.md")
README = os.path.join(ROOT, "README.md")
ERRORS_RS = os.path.join(ROOT, "src", "machinery", "errors.rs")
BLOCK = re.compile(r"```sql\n(.*?)```\n(?:\n```text\n(.*?)```\n)?", re.S)
MARK = "@@ example {} @@"
DATABASE = "sendjobs_reference"
README_DATABASE = "sendjobs_readme"
QUICK_LOOK = re.compile(r"^## Quick look\n(.*?)(?=^## |\Z)", re.S | re.M)


def psql(script, database=DATABASE):
    """Runs `script` in one psql session on `database`: its exit status, stdout and
    stderr. VERBOSITY verbose puts the SQLSTATE in each error line (see without_noise)."""
    out = subprocess.run(
        ["psql", "-X", "-q", "-d", database],
        text=True,
        capture_output=True,
        input="\\set VERBOSITY verbose\n\\set SHOW_CONTEXT never\n" + script,
    )
    return out.returncode, out.stdout, out.stderr


def without_noise(errors):
    """psql's "psql:<stdin>:N:" prefixes and the LOCATION lines (our source files) out."""
    errors = re.sub(r"^psql:<stdin>:\d+: ", "", errors, flags=re.M)
    return re.sub(r"^LOCATION: .*\n", "", errors, flags=re.M)


def query(sql):
    """A catalog query's output, for the coverage checks: it must not fail."""
    status, stdout, stderr = psql(sql)
    if status != 0 or "ERROR:" in stderr:
        raise RuntimeError(f"the coverage query failed: {stderr}")
    return stdout


def run_examples(blocks, database=DATABASE):
    subprocess.run(
        [
            "psql",
            "-X",
            "-q",
            "-d",
            "postgres",
            "-c",
            f"DROP DATABASE IF EXISTS {database}",
            "-c",
            f"CREATE DATABASE {database}",
        ],
        check=True,
    )
    # stdout and stderr are read apart: each example echoes a mark to both, so that the
    # two streams can be cut at the same places and put back in order within a block.
    _, stdout, stderr = psql(
        "".join(f"\\echo '{MARK.format(i)}'\n\\warn '{MARK.format(i)}'\n{sql}" for i, (sql, _) in enumerate(blocks)),
        database,
    )
    # psql prints a statement's result before the next statement's error, so within an
    # example the errors follow the results only when the error comes last; the examples
    # are written that way (one failing statement, at the end).
    return [o + without_noise(e) for o, e in zip(split(stdout, len(blocks)), split(stderr, len(blocks)))]


def split(text, n):
    parts = re.split(r"^@@ example (\d+) @@\n", text, flags=re.M)
    found = {int(parts[i]): parts[i + 1] for i in range(1, len(parts), 2)}
    return [found.get(i, "") for i in range(n)]


def drop_roles(names):
    """Drops the roles the Quick look creates, and its database (which holds their grants)."""
    subprocess.run(
        ["psql", "-X", "-q", "-d", "postgres", "-c", f"DROP DATABASE IF EXISTS {README_DATABASE}"]
        + [a for name in names for a in ("-c", f'DROP ROLE IF EXISTS "{name}"')],
        check=True,
    )


def check_quick_look(readme, update):
    """Runs the README's Quick look on a fresh database: its failures, and the README with
    psql's output written into its ```text blocks when `update`."""
    section = QUICK_LOOK.search(readme)
    blocks = [(m.group(1), m.group(2)) for m in BLOCK.finditer(section.group(1))] if section else []
    if not blocks:
        return ['README.md: no ```sql block in a "## Quick look" section'], readme
    roles = re.findall(r"^CREATE ROLE (\w+)", "".join(sql for sql, _ in blocks), re.M | re.I)
    drop_roles(roles)
    try:
        outputs = run_examples(blocks, README_DATABASE)
    finally:
        drop_roles(roles)
    failures = []
    for i, ((sql, expected), got) in enumerate(zip(blocks, outputs)):
        first = sql.splitlines()[0]
        if expected is None and "ERROR:" in got:
            failures.append(f"README Quick look, block {i + 1} ({first}) failed:\n{got}")
        elif expected is not None and expected != got and not update:
            failures.append(
                f"README Quick look, block {i + 1} ({first}):\n--- expected\n{expected}--- psql printed\n{got}"
            )
    if update:
        it = iter(outputs)

        def written(m):
            got = next(it)
            return m.group(0) if m.group(2) is None else f"```sql\n{m.group(1)}```\n\n```text\n{got}```\n"

        body = BLOCK.sub(written, section.group(1))
        readme = readme[: section.start(1)] + body + readme[section.end(1) :]
    print(f"README Quick look: {len(blocks)} blocks run, {len(failures)} failures", flush=True)
    return failures, readme


def coverage(doc):
    missing = []
    functions = query(
        "SELECT p.proname FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid "
        "AND d.classid = 'pg_proc'::regclass AND d.deptype = 'e' "
        "WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'sendjobs') "
        "AND obj_description(p.oid, 'pg_proc') NOT LIKE 'Internal:%';\n"
    )
    for name in re.findall(r"^\s*(sendjobs_\w+)\s*$", functions, re.M):
        if not re.search(rf"^### `{name}\(", doc, re.M):
            missing.append(f"function {name}")
    tables = query(
        "SELECT c.relname FROM pg_class c JOIN pg_depend d ON d.objid = c.oid "
        "AND d.classid = 'pg_class'::regclass AND d.deptype = 'e' AND c.relkind = 'r' "
        "WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'sendjobs');\n"
    )
    for name in re.findall(r"^\s*(send\w+)\s*$", tables, re.M):
        if f"'{name}'::regclass" not in doc:
            missing.append(f"table {name}")
    # A call loads the library (sendjobs-<version>: docs/decisions/0001-a-library-per-release.md).
    settings = query(
        "SELECT count(*) FROM sendjobs_stats();\nSELECT name FROM pg_settings WHERE name LIKE 'sendjobs.%';\n"
    )
    for name in re.findall(r"^\s*(sendjobs\.\w+)\s*$", settings, re.M):
        if f"`{name}`" not in doc:
            missing.append(f"setting {name}")
    with open(ERRORS_RS) as f:
        for code in sorted(set(re.findall(r"/// ([0-9A-Z]{5}) ", f.read()))):
            if f"`{code}`" not in doc:
                missing.append(f"SQLSTATE {code}")
    return missing


CITED = re.compile(r"`((?:src|sql|tests|workers|bench|docs|console|scripts)/[^`\s:<]+)(?:::(\w+))?`")


def cited_paths(page):
    """Every path the page cites (`tests/...`, `src/...`: a file of the repository, and
    `file::name` a function in it) that does not exist."""
    with open(os.path.join(ROOT, page)) as f:
        text = f.read()
    missing = []
    for path, name in sorted(set(CITED.findall(text))):
        full = os.path.join(ROOT, path)
        if not os.path.exists(full):
            missing.append(path)
        elif name:
            with open(full) as f:
                if not re.search(rf"\b(def|fn) {name}\b", f.read()):
                    missing.append(f"{path}::{name}")
    return missing


def trails_missing(doc):
    """Every function's entry ends with its trail: a line "Code: `src/...`; statements: ...;
    tests: ..." (the code, its statements, its invariants, its tests by path)."""
    missing = []
    for section in re.split(r"(?m)^(?=#{2,3} )", doc):
        m = re.match(r"### `(sendjobs_\w+)\(", section)
        if m and not re.search(r"(?m)^Code: `src/[^`]+`;.*tests: `", section):
            missing.append(m.group(1))
    return missing


def invariant_counts():
    """What README and CONTRIBUTING say of the invariants ("invariants 1–N") against the
    contract's numbered list."""
    with open(os.path.join(ROOT, "docs", "contract.md")) as f:
        count = len(re.findall(r"(?m)^(\d+)\. \*\*", f.read()))
    wrong = []
    for page in ("README.md", "CONTRIBUTING.md", "docs/testing.md", "docs/architecture.md"):
        with open(os.path.join(ROOT, page)) as f:
            for said in re.findall(r"invariants 1[–-](\d+)", f.read()):
                if int(said) != count:
                    wrong.append(f"{page} says invariants 1-{said}; docs/contract.md has {count}")
    return wrong


def architecture_coverage():
    """Every file of src/ named in docs/architecture.md, the map."""
    with open(os.path.join(ROOT, "docs", "architecture.md")) as f:
        map_ = f.read()
    files = [
        os.path.relpath(os.path.join(folder, name), ROOT)
        for folder, _, names in sorted(os.walk(os.path.join(ROOT, "src")))
        if os.path.relpath(folder, ROOT) != os.path.join("src", "tests")
        for name in sorted(names)
        if name.endswith(".rs")
    ]
    return [name for name in files if f"`{name}`" not in map_]


# The rooms of src/, lowest first: a file may import its own room's files and those of the
# rooms below it (docs/architecture.md). src/lib.rs and src/tests/ stand above them all.
FLOORS = ("machinery", "guards", "flow", "verbs")
CRATE_PATH = re.compile(r"(?<![\w:])\$?(crate|super)((?:::(?:\w+|\{))+)")


def expand_paths(text):
    """Every path a Rust file names from `crate::` (or `super::`), braces expanded:
    `crate::a::{b, c::d}` is `a::b` and `a::c::d`; `super::x` is returned as `super::x`."""
    paths = []
    for m in CRATE_PATH.finditer(text):
        head = m.group(1)
        rest = m.group(2)
        if rest.endswith("{"):
            # Take the whole brace group, nested ones included.
            start, depth, i = m.end() - 1, 0, m.end() - 1
            while i < len(text):
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                if depth == 0:
                    break
                i += 1
            prefix = rest[2:-3]
            for item in split_group(text[start + 1 : i]):
                paths.append(f"{head}::{prefix}::{item}" if prefix else f"{head}::{item}")
        else:
            paths.append(head + rest)
    return paths


def split_group(group):
    """The items of a brace group, with the groups inside it expanded."""
    items, depth, current = [], 0, ""
    for c in group + ",":
        if c == "," and depth == 0:
            item = current.strip()
            current = ""
            if not item:
                continue
            inner = re.match(r"^((?:\w+::)*)\{(.*)\}$", item, re.S)
            if inner:
                items += [inner.group(1) + sub for sub in split_group(inner.group(2))]
            else:
                items.append(item.split(" as ")[0].strip())
            continue
        depth += {"{": 1, "}": -1}.get(c, 0)
        current += c
    return items


def module_file(parts, crate="src"):
    """The file of `crate` (src/, console/src/) that holds the longest module prefix of
    `parts`, or None."""
    for n in range(len(parts), 0, -1):
        base = os.path.join(ROOT, crate, *parts[:n])
        for candidate in (base + ".rs", os.path.join(base, "mod.rs")):
            if os.path.isfile(candidate):
                return os.path.relpath(candidate, ROOT)
    return None


def floor_of(path):
    parts = path.split(os.sep)
    return FLOORS.index(parts[1]) if len(parts) > 2 and parts[1] in FLOORS else len(FLOORS)


def module_parts(path, crate="src"):
    """`src/flow/limited.rs` is flow::limited; a mod.rs is its folder's module."""
    parts = path[len(crate) + 1 : -len(".rs")].split(os.sep)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return parts


def src_imports(crate="src"):
    """Each file of `crate` and the files of it that it imports (`crate::...`, `super::...`)."""
    graph = {}
    for folder, _, names in sorted(os.walk(os.path.join(ROOT, crate))):
        for name in sorted(names):
            if not name.endswith(".rs"):
                continue
            path = os.path.relpath(os.path.join(folder, name), ROOT)
            with open(os.path.join(ROOT, path)) as f:
                code = re.sub(r"//.*", "", f.read())
            targets = set()
            for named in expand_paths(code):
                parts = [p for p in named.split("::")[1:] if p not in ("self", "*")]
                if named.startswith("super"):
                    parts = module_parts(path, crate)[:-1] + parts
                target = module_file(parts, crate)
                if target and target != path:
                    targets.add(target)
            graph[path] = sorted(targets)
    return graph


def import_problems(crate="src"):
    """Circles of imports among the files of `crate`, and, in src/, imports that run up a
    floor."""
    graph = src_imports(crate)
    problems = [
        f"{path} imports {target}, a room above its own"
        for path, targets in graph.items()
        for target in targets
        if crate == "src" and floor_of(target) > floor_of(path)
    ]
    # Circles: the strongly connected components of more than one file (Tarjan).
    index, low, stack, on_stack, counter = {}, {}, [], set(), [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, []):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                problems.append("a circle of imports: " + ", ".join(sorted(component)))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return problems


def index_coverage():
    """Every page of docs/ and every decision record, linked from docs/README.md."""
    with open(os.path.join(ROOT, "docs", "README.md")) as f:
        index = f.read()
    pages = [
        name
        for name in sorted(os.listdir(os.path.join(ROOT, "docs")))
        if name.endswith((".md", ".yaml", ".txt")) and name != "README.md"
    ]
    pages += [f"workers/{name}" for name in sorted(os.listdir(os.path.join(ROOT, "docs", "workers")))]
    pages += [f"decisions/{name}" for name in sorted(os.listdir(os.path.join(ROOT, "docs", "decisions")))]
    return [page for page in pages if f"]({page})" not in index]


BENCHMARKS_LIMIT = 25_000
LINK = re.compile(r"\]\((?!https?:|mailto:)([^)\s#]*)(?:#([^)\s]*))?\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def benchmarks_size():
    """BENCHMARKS.md holds the current figures only: a newer run replaces a table there, and
    the older one moves to the decision record it informed (issue 43)."""
    size = os.path.getsize(os.path.join(ROOT, "BENCHMARKS.md"))
    if size > BENCHMARKS_LIMIT:
        return [
            f"BENCHMARKS.md is {size:,} bytes, over {BENCHMARKS_LIMIT:,}: move the older runs to "
            'their decision records, under "## Measurements"'
        ]
    return []


def anchors(path):
    """The anchors GitHub makes of a page's headings: lower case, punctuation but - and _
    out, spaces to hyphens, a repeated one numbered."""
    with open(path) as f:
        text = FENCE.sub("", f.read())
    seen = {}
    for heading in re.findall(r"(?m)^#{1,6} (.*?)\s*#*\s*$", text):
        heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        yield slug if n == 0 else f"{slug}-{n}"


def broken_links():
    """Every relative link `[..](page.md#anchor)` of the repository's pages (the README,
    CONTRIBUTING, CHANGELOG, BENCHMARKS, bench/README.md and docs/, decisions included):
    the file exists, and the anchor, if any, is a heading of that page."""
    pages = ["README.md", "CONTRIBUTING.md", "CHANGELOG.md", "BENCHMARKS.md", "bench/README.md"]
    for folder in ("docs", "docs/decisions", "docs/workers"):
        pages += [f"{folder}/{n}" for n in sorted(os.listdir(os.path.join(ROOT, folder))) if n.endswith(".md")]
    broken = []
    for page in pages:
        with open(os.path.join(ROOT, page)) as f:
            text = FENCE.sub("", f.read())
        for target, anchor in sorted(set(LINK.findall(text))):
            path = os.path.join(ROOT, page)
            if target:
                path = os.path.normpath(os.path.join(ROOT, os.path.dirname(page), target))
            if not os.path.exists(path):
                broken.append(f"{page} links to {target}, which does not exist")
            elif anchor and path.endswith(".md") and anchor not in set(anchors(path)):
                broken.append(f"{page} links to {target or page}#{anchor}, which has no such heading")
    return broken


STATEMENTS = os.path.join(ROOT, "sql", "statements")
MARKER = re.compile(r"--- (params:|columns:|variant |end$)")
COMMENTS_PER_SQL_LINE = 0.25
HEADER_LINES = 15


def comment_weight():
    """sql/statements/ says what and why in a few lines and cites the decision records,
    which hold the figures (issue 43): the comment lines per line of SQL over the folder (a
    line that starts with `--`, but for the markers `--- params:`, `--- columns:`,
    `--- variant`, `--- end`; a blank line counts as neither), and the longest comment
    block, counted between two lines of SQL (a file's header, a variant's). Its failures,
    and the figures."""
    comments = sql = 0
    longest, where = 0, None
    for name in sorted(os.listdir(STATEMENTS)):
        if not name.endswith(".sql"):
            continue
        with open(os.path.join(STATEMENTS, name)) as f:
            lines = [line.strip() for line in f]
        block = 0
        for code in lines + [None]:
            if code and MARKER.match(code):
                continue
            if code and code.startswith("--"):
                comments += 1
                block += 1
            elif code != "":
                sql += code is not None
                if block > longest:
                    longest, where = block, name
                block = 0
    density = comments / sql
    figures = f"sql/statements/: {comments} comment lines, {sql} of SQL ({density:.2f}); longest header {longest}"
    failures = []
    if density > COMMENTS_PER_SQL_LINE:
        failures.append(f"{figures}: more than {COMMENTS_PER_SQL_LINE} comment lines per line of SQL")
    if longest > HEADER_LINES:
        failures.append(f"sql/statements/{where}: a comment block of {longest} lines (at most {HEADER_LINES})")
    return failures, figures


def static_failures(doc):
    """What the pages and the tree must agree on, no server asked."""
    failures = [f"not in docs/README.md, the index of the docs: {m}" for m in index_coverage()]
    failures += [f"not in docs/architecture.md, the map: {m}" for m in architecture_coverage()]
    failures += invariant_counts()
    failures += [f"docs/reference.md: {m}'s entry has no trail (Code: ...; tests: ...)" for m in trails_missing(doc)]
    for page in ("docs/contract.md", "docs/reference.md", "docs/architecture.md"):
        failures += [f"{page} cites what does not exist: {m}" for m in cited_paths(page)]
    failures += benchmarks_size()
    failures += broken_links()
    failures += comment_weight()[0]
    failures += [f"{crate}/: {m}" for crate in ("src", "console/src") for m in import_problems(crate)]
    return failures


def main(argv):
    update = "--update" in argv
    if "--static" in argv:
        with open(REFERENCE) as f:
            failures = static_failures(f.read())
        print(comment_weight()[1], flush=True)
        for failure in failures:
            print(failure, file=sys.stderr)
        print(f"reference, without a server: {len(failures)} failures", flush=True)
        return 1 if failures else 0
    with open(README) as f:
        readme = f.read()
    failures, written = check_quick_look(readme, update)
    if update and written != readme:
        with open(README, "w") as f:
            f.write(written)
    with open(REFERENCE) as f:
        doc = f.read()
    blocks = [(m.group(1), m.group(2)) for m in BLOCK.finditer(doc)]
    outputs = run_examples(blocks)
    if update:
        it = iter(outputs)
        doc = BLOCK.sub(lambda m: f"```sql\n{m.group(1)}```\n\n```text\n{next(it)}```\n", doc)
        with open(REFERENCE, "w") as f:
            f.write(doc)
    else:
        for i, ((sql, expected), got) in enumerate(zip(blocks, outputs)):
            if expected != got:
                failures.append(
                    f"example {i + 1} ({sql.splitlines()[0]}):\n--- expected\n{expected}--- psql printed\n{got}"
                )
    missing = coverage(doc)
    failures += [f"not in docs/reference.md: {m}" for m in missing]
    print(comment_weight()[1], flush=True)
    failures += static_failures(doc)
    for failure in failures:
        print(failure, file=sys.stderr)
    print(
        f"reference: {len(blocks)} examples {'written' if update else 'checked'}, {len(failures)} failures", flush=True
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
