-- The created_at of the first job with an id at or above $1 (a probe of the primary
-- keys): the search finds a time's place among the ids by halving, as ids and creation
-- times grow together.
SELECT created_at::text AS created_at, created_at >= $2::text::timestamptz AS at_or_after
  FROM @extschema@.send_jobs WHERE id >= $1 ORDER BY id LIMIT 1
