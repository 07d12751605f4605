--- params: tbl oid, status_column text, key_column text
--- columns: may_update, may_read
-- sendjobs_link_transactions (src/link.rs), as the caller: whether the caller may do what
-- the stamp will do, on table $1: UPDATE its status column $2 and read its key column $3.
-- Workers stamp with their own rights, so a link made without these would lend the
-- linker the workers' rights on a table it cannot touch.
SELECT pg_catalog.has_column_privilege($1, $2, 'UPDATE') AS may_update,
       pg_catalog.has_column_privilege($1, $3, 'SELECT') AS may_read
