-- The catalog explains itself: every function, table, column and index of sendjobs has a
-- COMMENT, so psql's \df+ and \d+ read like a reference, and the internal helpers say
-- they are internal.

-- Start afresh, whatever an earlier test may have left behind.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sendjobs CASCADE;
RESET client_min_messages;
CREATE EXTENSION sendjobs;

-- Objects of the extension without a comment: none. (Sequences, keys and constraints
-- other than the row rule are named after what they serve. From PostgreSQL 18 on, a
-- table's row type and its array type are members of the extension too: described by
-- their table, they are left out here.)
WITH members AS (
    SELECT classid, objid FROM pg_depend
     WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
       AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'sendjobs')
)
SELECT pg_describe_object(m.classid, m.objid, 0) AS without_comment
  FROM members m
  LEFT JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid
  LEFT JOIN pg_type t ON m.classid = 'pg_type'::regclass AND t.oid = m.objid
 WHERE obj_description(m.objid, (SELECT relname FROM pg_class WHERE oid = m.classid)) IS NULL
   AND coalesce(c.relkind, '-') <> 'S'
   AND NOT coalesce(t.typrelid <> 0 OR EXISTS (SELECT FROM pg_type e WHERE e.oid = t.typelem AND e.typrelid <> 0), false)
UNION ALL
SELECT format('column %s.%s', a.attrelid::regclass, a.attname)
  FROM members m
  JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid AND c.relkind = 'r'
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
 WHERE col_description(a.attrelid, a.attnum) IS NULL
UNION ALL
SELECT format('index %s', i.indexrelid::regclass)
  FROM members m
  JOIN pg_index i ON m.classid = 'pg_class'::regclass AND i.indrelid = m.objid
 WHERE obj_description(i.indexrelid, 'pg_class') IS NULL
   AND NOT EXISTS (SELECT FROM pg_constraint WHERE conindid = i.indexrelid)  -- a key's index
ORDER BY 1;

-- The functions: the API, then the internal helpers (their comments begin "Internal:").
SELECT p.oid::regprocedure AS function,
       obj_description(p.oid, 'pg_proc') LIKE 'Internal:%' AS internal
  FROM pg_proc p
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'sendjobs')
 ORDER BY 2, p.proname;
