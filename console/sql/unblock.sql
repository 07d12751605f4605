-- Lets an ordering key go while the job the operator saw stop it ($2) still does: a key
-- let go and stopped again by another failure since the page was drawn stays stopped
-- (NULL).
SELECT CASE WHEN EXISTS (SELECT FROM @extschema@.sendjobs_blocked_keys AS b
                          WHERE b.ordering_key = $1 AND b.job_id = $2)
            THEN @extschema@.sendjobs_unblock_key($1::text) END AS was_stopped
