-- A text[] as its literal, quoted as Postgres quotes it (src/guards/guard.rs: the guard's
-- trigger arguments).
--- params: elements text[]
--- columns: literal
SELECT $1::pg_catalog.text AS literal
