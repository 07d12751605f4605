CREATE SCHEMA bench_m;
CREATE TABLE bench_m.send_jobs (LIKE bench_e.send_jobs INCLUDING ALL);
ALTER TABLE bench_m.send_jobs SET (fillfactor=80);
CREATE TABLE bench_m.send_job_events (LIKE bench_e.send_job_events INCLUDING ALL);
CREATE TABLE bench_m.sendjobs_transaction_link (LIKE bench_e.sendjobs_transaction_link INCLUDING ALL);
ALTER TABLE bench_m.send_job_events ADD CONSTRAINT send_job_events_job_id_fkey FOREIGN KEY (job_id) REFERENCES bench_m.send_jobs(id) ON DELETE CASCADE;
