--- params: none
--- columns: schema, namespace, send_jobs, owner, version
-- The extension as the functions need it (src/machinery/spi_plans.rs): its schema (quoted,
-- and by oid), send_jobs' oid, its owner, its catalog's version.
SELECT pg_catalog.quote_ident(n.nspname) AS schema, n.oid AS namespace, c.oid AS send_jobs,
       e.extowner AS owner, e.extversion AS version
  FROM pg_catalog.pg_extension e
  JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
  JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = 'send_jobs'
 WHERE e.extname = 'sendjobs'
