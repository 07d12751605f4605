--- params: literal text
--- columns: elements
-- A text[] literal read back (src/guards/guard.rs: a guard's trigger arguments).
SELECT $1::pg_catalog.text[] AS elements
