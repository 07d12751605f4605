-- sendjobs 0.2.0 -> 0.2.1: security fixes (docs/decisions/0001-a-library-per-release.md,
-- docs/operations.md "Upgrading").
--  * Each release has its own library, sendjobs-<version>: until a database is updated,
--    its catalog keeps calling the library of its own release, and this one serves only
--    its own catalog. Every C function of the extension moves to sendjobs-0.2.1 here.
--  * The install and update scripts resolve every operator and function in pg_catalog,
--    whatever the extension's schema holds (tests/pg_regress/sql/install.sql plants them).
--  * The business-row stamp runs as the role that linked the table, restricted, with the
--    search_path of the table's schema and its types', no longer as the caller with the
--    caller's path
--    (sendjobs_transaction_link.linked_by; a link made before is the table owner's).
--  * The rest is in the library: linking needs the linker's own rights on the linked
--    columns; run_at and retry_at must be finite and sendjobs_stats survives a job due at
--    -infinity; a purge keeps a redriven job's new job while the failed one is kept, and
--    refuses a cutoff later than now; a redrive of many jobs plans for their number;
--    queue names are at most 128 bytes (enqueue, wake-ups on).
\echo Use "ALTER EXTENSION sendjobs UPDATE TO '0.2.1'" to load this file. \quit

-- Every C function of the extension, rebound to this release's library: its definition
-- as Postgres prints it (schema-qualified, with its defaults and attributes), with the
-- library's name replaced, run again as CREATE OR REPLACE (the function keeps its oid,
-- its privileges and its comment; triggers and the CHECK that call it follow).
DO $$
DECLARE
    fn record;
    rebound text;
BEGIN
    FOR fn IN SELECT p.oid, p.probin
                FROM pg_catalog.pg_depend AS d
                JOIN pg_catalog.pg_proc AS p ON p.oid OPERATOR(pg_catalog.=) d.objid
                JOIN pg_catalog.pg_language AS l ON l.oid OPERATOR(pg_catalog.=) p.prolang
               WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass::pg_catalog.oid
                 AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass::pg_catalog.oid
                 AND d.refobjid OPERATOR(pg_catalog.=) (SELECT e.oid FROM pg_catalog.pg_extension AS e
                                                         WHERE e.extname OPERATOR(pg_catalog.=) 'sendjobs'::pg_catalog.name)
                 AND d.deptype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char"
                 AND l.lanname OPERATOR(pg_catalog.=) 'c'::pg_catalog.name
                 AND p.probin OPERATOR(pg_catalog.<>) 'sendjobs-@CARGO_VERSION@'::pg_catalog.text
    LOOP
        -- pg_get_functiondef prints the library on a line of its own: AS 'library', symbol.
        rebound := pg_catalog.replace(pg_catalog.pg_get_functiondef(fn.oid),
                                      E'\nAS ' OPERATOR(pg_catalog.||) pg_catalog.quote_literal(fn.probin) OPERATOR(pg_catalog.||) ', ',
                                      E'\nAS ''sendjobs-@CARGO_VERSION@'', ');
        IF pg_catalog.strpos(rebound, E'\nAS ''sendjobs-@CARGO_VERSION@'', ') OPERATOR(pg_catalog.=) 0 THEN
            RAISE EXCEPTION 'sendjobs: cannot rebind function % to its new library', fn.oid::pg_catalog.regprocedure;
        END IF;
        EXECUTE rebound;
    END LOOP;
END $$;

-- Stamps run as the role that linked the table; a link made before 0.2.1 did not record
-- it, and becomes the table owner's, who may do all a stamp does.
ALTER TABLE @extschema@.sendjobs_transaction_link ADD COLUMN linked_by regrole;
UPDATE @extschema@.sendjobs_transaction_link AS link
   SET linked_by = (SELECT c.relowner FROM pg_catalog.pg_class AS c
                     WHERE c.oid OPERATOR(pg_catalog.=) link.tbl::pg_catalog.oid)::pg_catalog.regrole;
ALTER TABLE @extschema@.sendjobs_transaction_link ALTER COLUMN linked_by SET NOT NULL;
COMMENT ON COLUMN @extschema@.sendjobs_transaction_link.linked_by IS 'The role that linked the table: the stamps run as it, restricted, whoever finalizes (for a link made before 0.2.1, the table''s owner).';
