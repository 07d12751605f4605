--- params: tbl oid, status_column text, key_column text
--- columns: may_update, may_read
-- sendjobs_link_transactions (src/verbs/link.rs), as the caller: may it do on table $1 what
-- stamps will do as it, update $2 and read $3 (decision 0005)?
SELECT pg_catalog.has_column_privilege($1, $2, 'UPDATE') AS may_update,
       pg_catalog.has_column_privilege($1, $3, 'SELECT') AS may_read
