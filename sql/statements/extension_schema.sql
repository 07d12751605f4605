-- The schema the extension lives in, quoted, and the oid of its send_jobs (src/spi_plans.rs).
SELECT pg_catalog.quote_ident(n.nspname), c.oid
  FROM pg_catalog.pg_extension e
  JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
  JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = 'send_jobs'
 WHERE e.extname = 'sendjobs'
