--- params: none
--- columns: turn
-- sendjobs_claim (src/claim.rs), before its pass for ordered jobs (claim.sql, variant
-- keyed): the turn of such passes, held to the end of the claim's transaction. The pass
-- then runs in a snapshot taken after the turn, and sees every claim of an ordered job
-- that committed before it: two claims cannot each take a job of one key, neither seeing
-- the other's. The key is send_jobs' oid, in the one-bigint space of advisory locks
-- (docs/decisions/0013-flow-control-in-the-claim.md: an application's advisory locks
-- should not use it).
SELECT pg_catalog.pg_advisory_xact_lock(
    '@extschema@.send_jobs'::pg_catalog.regclass::pg_catalog.oid::pg_catalog.int8) AS turn
