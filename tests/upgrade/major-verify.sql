-- After pg_upgrade to the newer major (tests/upgrade/major.sh): the work goes on with the
-- generations of before. Each check raises an error when it does not hold.
\ir expect.sql
SELECT pg_temp.expect(current_setting('server_version_num')::int / 10000 = :major, 'the server is the new major');
-- The consumer goes on where it was, mid-batch: the two events it had not read, once.
SELECT pg_temp.expect(string_agg(job_id::text, ',') = '3,4', 'the outbox consumer reads on from its position')
  FROM sendjobs_read_events('relay');
SELECT pg_temp.expect(count(*) = 0, 'and then has read everything') FROM sendjobs_read_events('relay');
-- The claim made before the upgrade still holds job 5: its finalize applies and stamps.
SELECT pg_temp.expect(sendjobs_finalize(5, 1, 'sent') = 'applied', 'the pre-upgrade claim of job 5 finalizes');
-- Job 6's lease had expired: a claim takes it (generation 2) and the due jobs 7 and 9,
-- the settings of before in force (the database's default lease of 42 s).
SELECT pg_temp.expect(string_agg(concat_ws(':', id, claim_generation, lease_expires_at - claimed_at), ',' ORDER BY id)
                      = '6:2:00:00:42,7:1:00:00:42,9:1:00:00:42', 'the claim takes the expired and the due jobs')
  FROM sendjobs_claim(10);
SELECT pg_temp.expect(sendjobs_finalize(6, 1, 'sent') = 'stale', 'the superseded claim of job 6 is stale');
SELECT pg_temp.expect(sendjobs_finalize(6, 2, 'failed', 'no') = 'applied', 'the new claim of job 6 applies');
SELECT pg_temp.expect(sendjobs_finalize(7, 1, 'sent') = 'applied', 'job 7 finalizes');
SELECT pg_temp.expect(sendjobs_finalize(9, 1, 'sent') = 'applied', 'the redriven job finalizes');
SELECT pg_temp.expect(string_agg(id || ':' || status, ',' ORDER BY id)
                      = 'tx-1:success,tx-2:failed,tx-3:success,tx-4:pending,tx-5:success,tx-6:failed,tx-7:success,tx-8:pending,tx-9:pending',
                      'business rows stamped through the link and the guard')
  FROM transactions;
UPDATE transactions SET status = 'failed' WHERE id = 'tx-1';
SELECT pg_temp.expect(status = 'success', 'the guard refuses a terminal flip') FROM transactions WHERE id = 'tx-1';
SELECT pg_temp.expect(sendjobs_enqueue('{}', idempotency_key => 'k8') = 8, 'a key finds its job');
SELECT pg_temp.expect(sendjobs_enqueue('{}') > 9, 'new ids follow the old ones');
SET ROLE major_worker;
SELECT pg_temp.expect(count(*) = 1, 'the worker level still claims') FROM sendjobs_claim(1);
RESET ROLE;
SELECT 'pg_upgrade checks passed' AS result;
