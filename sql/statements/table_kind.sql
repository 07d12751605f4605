--- params: tbl oid
--- columns: relkind
-- The relkind of relation $1 (src/guards/catalog.rs): only tables ('r', 'p') may be guarded or linked.
SELECT relkind::text AS relkind FROM pg_catalog.pg_class WHERE oid = $1
