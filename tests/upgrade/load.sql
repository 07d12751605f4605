-- pgbench script of the worker that runs through the upgrade (tests/upgrade/upgrade.sh):
-- enqueue one job, claim one, finalize it, each its own transaction (pgbench -C: every
-- transaction on a new connection, so new backends load whichever library and catalog
-- is installed at that instant). A claim can come back empty while another client's
-- claim holds the rows this one's snapshot sees; verify.sql drains what is left.
SELECT sendjobs_enqueue('{}', queue => 'load') AS enqueued \gset
SELECT coalesce(max(id), 0) AS id, coalesce(max(claim_generation), 0) AS generation
  FROM sendjobs_claim(1, '1 minute', 'load') \gset
\if :id > 0
SELECT 1 / (sendjobs_finalize(:id, :generation, 'sent') = 'applied')::int AS applied;
\endif
