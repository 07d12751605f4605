-- The schema the extension lives in, quoted as an identifier, for the pinned search_path
-- of every later connection. Runs before that path is set: every name is qualified.
SELECT pg_catalog.quote_ident(n.nspname) AS schema
  FROM pg_catalog.pg_extension AS e
  JOIN pg_catalog.pg_namespace AS n ON n.oid = e.extnamespace
 WHERE e.extname = 'sendjobs'
