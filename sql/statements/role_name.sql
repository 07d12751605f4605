--- params: role oid
--- columns: name
-- A role as SQL text (src/verbs/access.rs), quoted as needed: regrole's output.
SELECT $1::pg_catalog.regrole::pg_catalog.text AS name
