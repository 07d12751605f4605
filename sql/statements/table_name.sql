--- params: tbl oid
--- columns: name
-- Table $1 (oid) as SQL text: schema-qualified when needed, quoted as needed.
SELECT $1::pg_catalog.regclass::pg_catalog.text AS name
