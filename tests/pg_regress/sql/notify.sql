-- sendjobs_notify: wake-ups are on or off per queue, kept in sendjobs_queues. That an
-- enqueue then sends one NOTIFY per queue and transaction is
-- tests/isolation/specs/wakeup-once-per-transaction.spec.

SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sendjobs CASCADE;
DROP TABLE IF EXISTS payments;
RESET client_min_messages;
CREATE EXTENSION sendjobs;
\set SHOW_CONTEXT never

SELECT sendjobs_notify('partner-a', true);
SELECT sendjobs_notify('partner-b', true);
SELECT sendjobs_notify('partner-b', false);
SELECT * FROM sendjobs_queues ORDER BY queue;

-- A queue never named has no row: its wake-ups are off.
SELECT count(*) AS rows_for_partner_c FROM sendjobs_queues WHERE queue = 'partner-c';

DROP EXTENSION sendjobs;
