-- After the upgrade: the database populate.sql filled at the previous release, and the
-- jobs the worker ran through the upgrade, under the new release. Each check raises an
-- error (and so fails the test) when it does not hold.
\ir expect.sql

SELECT pg_temp.expect(extversion = :'version', 'the extension is at the new version')
  FROM pg_extension WHERE extname = 'sendjobs';

-- The worker ran through the upgrade; what it left unclaimed is claimed and sent now. A
-- finalize that failed at the update from 0.1.0 (23514, docs/operations.md) left its job
-- in flight under a 1-minute lease: the lease is ended here rather than waited for, and
-- the job is claimed again like any whose worker went away.
UPDATE send_jobs SET lease_expires_at = now() WHERE queue = 'load' AND status = 'in_flight';
SELECT pg_temp.expect(coalesce(bool_and(sendjobs_finalize(id, claim_generation, 'sent') = 'applied'), true),
                      'the rest of the load is sent')
  FROM sendjobs_claim(1000, '1 minute', 'load');
SELECT pg_temp.expect(count(*) > 0 AND bool_and(status = 'sent'), 'every load job sent')
  FROM send_jobs WHERE queue = 'load';
SELECT pg_temp.expect(
    (SELECT count(*) FROM send_job_events e JOIN send_jobs j ON j.id = e.job_id WHERE j.queue = 'load')
  = (SELECT count(*) FROM send_jobs WHERE queue = 'load'), 'one event per load job');

-- The events the previous release staged in the last minutes (the load's, sent through
-- the upgrade) got their job's queue, so that sendjobs_stats counts them. A finalize
-- that began before the update, and waited for its lock, stages its event as it was
-- planned, without a queue: at most one for each of the worker's 2 connections.
SELECT pg_temp.expect(count(*) > 0 AND count(*) FILTER (WHERE e.queue IS NULL) <= 2,
                      format('the recent events of the previous release have their queue (%s of %s have none)',
                             count(*) FILTER (WHERE e.queue IS NULL), count(*)))
  FROM send_job_events e JOIN send_jobs j ON j.id = e.job_id
 WHERE j.queue = 'load' AND e.created_at > now() - interval '10 minutes';

-- Finished jobs and their events are kept as they were.
SELECT pg_temp.expect(string_agg(concat_ws(':', id, status, claim_generation), ',' ORDER BY id)
                      = '1:sent:1,2:failed:1', 'finished jobs unchanged')
  FROM send_jobs WHERE id IN (1, 2);
SELECT pg_temp.expect(string_agg(concat_ws(':', job_id, kind, claim_generation), ',' ORDER BY job_id)
                      = '1:sent:1,2:failed:1', 'their events unchanged')
  FROM send_job_events WHERE job_id <= 6;
-- They moved to send_jobs_finished; send_jobs itself keeps the unfinished ones. The
-- idempotency keys moved to send_job_keys.
SELECT pg_temp.expect(string_agg(concat_ws(':', id, tableoid::regclass), ',' ORDER BY id)
                      = '1:send_jobs_finished,2:send_jobs_finished,3:send_jobs,4:send_jobs,5:send_jobs,6:send_jobs',
                      'finished jobs in send_jobs_finished, the others in send_jobs')
  FROM send_jobs WHERE id <= 6;
SELECT pg_temp.expect(count(*) = 0, 'no finished job left in send_jobs itself')
  FROM ONLY send_jobs WHERE finished_at IS NOT NULL;
SELECT pg_temp.expect(string_agg(concat_ws(':', idempotency_key, job_id), ',' ORDER BY job_id) = 'k5:5,k6:6',
                      'the idempotency keys in send_job_keys')
  FROM send_job_keys WHERE idempotency_key IN ('k5', 'k6');

-- A claim now takes the expired lease (4, generation 2) and the due job (5), not the job
-- whose lease still runs (3) nor the scheduled one (6).
SELECT pg_temp.expect(string_agg(concat_ws(':', id, claim_generation), ',' ORDER BY id) = '4:2,5:1',
                      'the claim takes exactly the expired and the due job')
  FROM sendjobs_claim(10, '1 minute', 'default');

-- The claim made before the upgrade still holds its job: its finalize applies and stamps.
SELECT pg_temp.expect(sendjobs_finalize(3, 1, 'sent') = 'applied', 'the pre-upgrade claim finalizes');
-- The expired claim made before the upgrade was superseded: stale; the new one applies.
SELECT pg_temp.expect(sendjobs_finalize(4, 1, 'sent') = 'stale', 'the superseded claim is stale');
SELECT pg_temp.expect(sendjobs_finalize(4, 2, 'failed', 'partner said no') = 'applied', 'the new claim applies');
SELECT pg_temp.expect(sendjobs_finalize(5, 1, 'sent') = 'applied', 'the due job finalizes');
SELECT pg_temp.expect(string_agg(concat_ws(':', id, status), ',' ORDER BY id) = 'tx-1:success,tx-2:failed,tx-3:success,tx-4:failed,tx-5:success,tx-6:pending',
                      'business rows stamped through the link')
  FROM transactions;

-- The guard still holds, and idempotency keys still find their jobs.
UPDATE transactions SET status = 'failed' WHERE id = 'tx-1';
SELECT pg_temp.expect(status = 'success', 'the guard refuses a terminal flip') FROM transactions WHERE id = 'tx-1';
SELECT pg_temp.expect(sendjobs_enqueue('{}', idempotency_key => 'k6') = 6, 'an idempotency key finds its job');
SELECT pg_temp.expect(sendjobs_enqueue('{}', idempotency_key => 'k5') = 5, 'the key of a job sent since finds it');
SELECT pg_temp.expect(status = 'pending' AND next_attempt_at > now(), 'the scheduled job waits')
  FROM send_jobs WHERE id = 6;

-- The lifecycle of 0.2.0 works on what 0.1.0 left: the job that failed before the
-- upgrade (2, tx-2) is redriven, and its business row goes failed -> pending through
-- the guard's exit (the link's on_redrive was added as 'pending'); the new job is
-- cancelled; finished jobs are purged with their events; a job whose lease expires on
-- its last attempt gives up. (The event 0.1.0 staged for job 2 minutes ago was given its
-- queue by the update.)
SELECT pg_temp.expect(queue = 'default', 'a recent event of 0.1.0 has its queue') FROM send_job_events WHERE job_id = 2;
SELECT new_id AS redriven FROM sendjobs_redrive(ARRAY[2]) \gset
SELECT pg_temp.expect(status = 'pending', 'a redrive stamps on_redrive') FROM transactions WHERE id = 'tx-2';
SELECT pg_temp.expect(sendjobs_cancel(:redriven) = 'applied', 'the redriven job is cancelled');
SELECT pg_temp.expect(kind = 'cancelled' AND queue = 'default', 'its cancelled event')
  FROM send_job_events WHERE job_id = :redriven;
SELECT pg_temp.expect(sendjobs_purge('0 seconds', 100000) > 0, 'finished jobs are purged');
-- The redriven job's new job stays while the failed job it sends again is there (0.2.1):
-- the purge that deleted the failed one leaves it to the next.
SELECT pg_temp.expect(sendjobs_purge('0 seconds', 100000) = 1, 'the redrive''s new job goes with the next purge');
SELECT pg_temp.expect(count(*) = 0, 'no finished job is left')
  FROM send_jobs WHERE status IN ('sent', 'failed', 'cancelled');
SELECT pg_temp.expect(count(*) = 0, 'no event is left') FROM send_job_events;
SELECT sendjobs_enqueue('{}', queue => 'poison', max_attempts => 1) AS poison \gset
SELECT pg_temp.expect(count(*) = 1, 'the poison job is claimed once') FROM sendjobs_claim(1, '0 seconds', 'poison');
SELECT pg_temp.expect(count(*) = 0, 'and never again') FROM sendjobs_claim(1, '0 seconds', 'poison');
SELECT pg_temp.expect(status = 'failed' AND last_error LIKE 'sendjobs: gave up:%', 'it gave up')
  FROM send_jobs WHERE id = :poison;
SELECT pg_temp.expect(count(*) >= 1, 'the stats see it') FROM sendjobs_stats() WHERE queue = 'poison' AND failed_5m = 1;
SELECT pg_temp.expect(sendjobs_enqueue('{}', queue => 'acme' || chr(65039)) > 7,
                      'a queue made under a name since refused keeps it (decision 0018)');
SELECT 'upgrade checks passed' AS result;
