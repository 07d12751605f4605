\set id1 random(1, :backlog)
\set id2 random(1, :backlog)
UPDATE bench_f.send_jobs SET attempts = attempts + 1 WHERE id = :id1;
UPDATE bench_f.send_jobs SET attempts = attempts + 1 WHERE id = :id2;
