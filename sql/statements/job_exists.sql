-- After a fenced update that matched nothing: does job $1 exist ('stale') or not (P0002)?
SELECT EXISTS (SELECT FROM @extschema@.send_jobs WHERE id = $1)
