-- What each role whose name starts with rights_ may do with the extension's objects
-- (tests/upgrade/rights.py), one privilege a line: EXECUTE on each function (by name:
-- the test checks that no name is two functions), SELECT, INSERT, UPDATE, DELETE and
-- TRUNCATE on each table and view, and SELECT, INSERT or UPDATE on a column where the
-- role has it on the column and not on its whole relation (a privilege on the relation
-- covers every column, new ones too). Each object also has a line of its own, '-'.
WITH members AS (
    SELECT d.classid, d.objid FROM pg_catalog.pg_depend d
     WHERE d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
       AND d.refobjid = (SELECT oid FROM pg_catalog.pg_extension WHERE extname = 'sendjobs')
       AND d.deptype = 'e'
),
functions AS (
    SELECT p.oid, p.proname::text AS name FROM pg_catalog.pg_proc p JOIN members m
        ON m.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND m.objid = p.oid
),
relations AS (
    SELECT c.oid, c.relname::text AS name FROM pg_catalog.pg_class c JOIN members m
        ON m.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND m.objid = c.oid
     WHERE c.relkind IN ('r', 'p', 'v')
),
columns AS (
    SELECT r.oid, a.attnum, r.name || '.' || a.attname AS name
      FROM relations r JOIN pg_catalog.pg_attribute a ON a.attrelid = r.oid
     WHERE a.attnum > 0 AND NOT a.attisdropped
),
roles AS (
    SELECT oid FROM pg_catalog.pg_roles WHERE rolname LIKE 'rights\_%'
)
SELECT '-', 'EXECUTE ' || name FROM functions
UNION ALL
SELECT '-', priv || ' ' || name
  FROM relations, unnest('{SELECT,INSERT,UPDATE,DELETE,TRUNCATE}'::text[]) AS priv
UNION ALL
SELECT '-', priv || ' ' || name
  FROM columns, unnest('{SELECT,INSERT,UPDATE}'::text[]) AS priv
UNION ALL
SELECT r.oid::regrole::text, 'EXECUTE ' || f.name
  FROM roles r, functions f
 WHERE pg_catalog.has_function_privilege(r.oid, f.oid, 'EXECUTE')
UNION ALL
SELECT r.oid::regrole::text, priv || ' ' || t.name
  FROM roles r, relations t, unnest('{SELECT,INSERT,UPDATE,DELETE,TRUNCATE}'::text[]) AS priv
 WHERE pg_catalog.has_table_privilege(r.oid, t.oid, priv)
UNION ALL
SELECT r.oid::regrole::text, priv || ' ' || c.name
  FROM roles r, columns c, unnest('{SELECT,INSERT,UPDATE}'::text[]) AS priv
 WHERE pg_catalog.has_column_privilege(r.oid, c.oid, c.attnum, priv)
   AND NOT pg_catalog.has_table_privilege(r.oid, c.oid, priv)
