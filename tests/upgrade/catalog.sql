-- Everything the extension put in this database, described as sorted text with no oids,
-- so that an upgraded database and a fresh one can be compared line by line
-- (tests/upgrade/upgrade.sh diffs the two outputs).
\pset tuples_only on
\pset format unaligned
WITH ext AS (
    SELECT oid, extconfig, extcondition FROM pg_catalog.pg_extension WHERE extname = 'sendjobs'
),
members AS (
    SELECT d.classid, d.objid FROM pg_catalog.pg_depend d, ext
     WHERE d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
       AND d.refobjid = ext.oid AND d.deptype = 'e'
),
member_tables AS (
    SELECT c.oid FROM pg_catalog.pg_class c JOIN members m
        ON m.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND m.objid = c.oid
     WHERE c.relkind IN ('r', 'p')
),
lines AS (
    -- every member object, with its comment
    SELECT pg_catalog.pg_describe_object(m.classid, m.objid, 0)
           || ' | comment: ' || coalesce(pg_catalog.obj_description(m.objid, c.relname), '-') AS line
      FROM members m JOIN pg_catalog.pg_class c ON c.oid = m.classid
    UNION ALL
    -- functions: signature, result, volatility, strictness, security, settings, rights, body
    SELECT 'function ' || p.oid::pg_catalog.regprocedure::text
           || ' returns ' || pg_catalog.pg_get_function_result(p.oid)
           || ' | defaults ' || coalesce(pg_catalog.pg_get_expr(p.proargdefaults, 0), '-')
           || ' | ' || p.provolatile::text || p.proisstrict::text || p.prosecdef::text || p.proparallel::text
           || ' | config ' || coalesce(p.proconfig::text, '-') || ' | acl ' || coalesce(p.proacl::text, '-')
           || ' | ' || l.lanname || ' ' || p.prosrc || ' ' || coalesce(p.probin, '-')
      FROM pg_catalog.pg_proc p JOIN members m
        ON m.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND m.objid = p.oid
      JOIN pg_catalog.pg_language l ON l.oid = p.prolang
    UNION ALL
    -- relations: kind, options, rights
    SELECT 'relation ' || c.oid::pg_catalog.regclass::text || ' | ' || c.relkind::text
           || ' | options ' || coalesce(c.reloptions::text, '-') || ' | acl ' || coalesce(c.relacl::text, '-')
      FROM pg_catalog.pg_class c JOIN members m
        ON m.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND m.objid = c.oid
    UNION ALL
    -- columns of the tables: type, default, nullability, identity, comment
    SELECT 'column ' || a.attrelid::pg_catalog.regclass::text || '.' || a.attname || ' #' || a.attnum
           || ' ' || pg_catalog.format_type(a.atttypid, a.atttypmod)
           || ' | not null ' || a.attnotnull::text || ' | identity ' || a.attidentity::text
           || ' | default ' || coalesce(pg_catalog.pg_get_expr(ad.adbin, ad.adrelid), '-')
           || ' | comment: ' || coalesce(pg_catalog.col_description(a.attrelid, a.attnum), '-')
      FROM pg_catalog.pg_attribute a
      JOIN member_tables t ON t.oid = a.attrelid
      LEFT JOIN pg_catalog.pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
     WHERE a.attnum > 0 AND NOT a.attisdropped
    UNION ALL
    -- constraints, indexes and triggers of the tables
    SELECT 'constraint ' || co.conrelid::pg_catalog.regclass::text || ' ' || co.conname
           || ' ' || pg_catalog.pg_get_constraintdef(co.oid)
           || ' | comment: ' || coalesce(pg_catalog.obj_description(co.oid, 'pg_constraint'), '-')
      FROM pg_catalog.pg_constraint co JOIN member_tables t ON t.oid = co.conrelid
    UNION ALL
    SELECT 'index ' || pg_catalog.pg_get_indexdef(i.indexrelid)
           || ' | comment: ' || coalesce(pg_catalog.obj_description(i.indexrelid, 'pg_class'), '-')
      FROM pg_catalog.pg_index i JOIN member_tables t ON t.oid = i.indrelid
    UNION ALL
    SELECT 'trigger ' || pg_catalog.pg_get_triggerdef(tg.oid)
      FROM pg_catalog.pg_trigger tg JOIN member_tables t ON t.oid = tg.tgrelid
     WHERE NOT tg.tgisinternal
    UNION ALL
    SELECT 'event trigger ' || e.evtname || ' on ' || e.evtevent || ' ' || e.evtfoid::pg_catalog.regproc::text
           || ' ' || e.evtenabled::text
      FROM pg_catalog.pg_event_trigger e JOIN members m
        ON m.classid = 'pg_catalog.pg_event_trigger'::pg_catalog.regclass AND m.objid = e.oid
    UNION ALL
    -- the privileges each object starts with, what pg_dump takes as the extension's own
    -- (it dumps the grants beyond them; a grant of an update script would be among them)
    SELECT 'initial privileges ' || pg_catalog.pg_describe_object(ip.classoid, ip.objoid, ip.objsubid)
           || ' ' || ip.initprivs::text
      FROM pg_catalog.pg_init_privs ip JOIN members m ON m.classid = ip.classoid AND m.objid = ip.objoid
    UNION ALL
    -- what pg_dump keeps of the extension's tables
    SELECT 'dumped ' || ext.extconfig::pg_catalog.regclass[]::text || ' ' || ext.extcondition::text FROM ext
)
SELECT line FROM lines ORDER BY line COLLATE "C";
