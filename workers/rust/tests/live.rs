//! The worker against the real extension: each test makes its own database in the
//! server that `SENDJOBS_WORKER_TEST_DSN` names (a superuser's libpq connection string;
//! scripts/test.sh starts a throwaway cluster for it and runs these with `--ignored`).
//!
//! With `SENDJOBS_WORKER_TEST_POOLER` set (the connection string of a PgBouncer in
//! transaction mode in front of that server), the workers connect through the pooler,
//! without LISTEN, while the tests' own connections stay direct; a killed connection is
//! the pooler's `KILL` (`SENDJOBS_WORKER_TEST_POOLER_ADMIN`). tests/workers/check.py runs
//! the tests that need neither LISTEN nor a worker's session by name that way.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sendjobs_client::{Config, Job, Outcome, Shutdown, SqlState, Worker};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_postgres::{Client, NoTls};

/// A fresh database with the extension; returns its connection string and a client.
async fn database(name: &str) -> (String, Client) {
    let base = std::env::var("SENDJOBS_WORKER_TEST_DSN").expect("SENDJOBS_WORKER_TEST_DSN");
    let admin = connect(&format!("{base} dbname=postgres")).await;
    for sql in [
        format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        format!("CREATE DATABASE {name}"),
    ] {
        admin.batch_execute(&sql).await.unwrap();
    }
    let client = connect(&format!("{base} dbname={name}")).await;
    client
        .batch_execute("CREATE EXTENSION sendjobs")
        .await
        .unwrap();
    let workers_base = std::env::var("SENDJOBS_WORKER_TEST_POOLER").unwrap_or(base);
    (format!("{workers_base} dbname={name}"), client)
}

/// A worker's settings: through a pooler, without LISTEN (it does not survive there).
fn worker_config(dsn: impl Into<String>) -> Config {
    let pooled = std::env::var_os("SENDJOBS_WORKER_TEST_POOLER").is_some();
    Config::new(dsn).listen(!pooled)
}

async fn connect(dsn: &str) -> Client {
    let (client, connection) = tokio_postgres::connect(dsn, NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

async fn enqueue(client: &Client, count: i64) {
    client
        .execute(
            "SELECT sendjobs_enqueue(jsonb_build_object('n', g), 'q') FROM generate_series(1, $1::int8) g",
            &[&count],
        )
        .await
        .unwrap();
}

async fn scalar(client: &Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).await.unwrap().get(0)
}

/// What the stand-in partner received: sends per (job id, generation).
#[derive(Clone, Default)]
struct Partner(Arc<Mutex<HashMap<(i64, i64), u32>>>);

impl Partner {
    fn record(&self, job: &Job) {
        *self
            .0
            .lock()
            .unwrap()
            .entry((job.id, job.generation))
            .or_default() += 1;
    }
    fn sends_of(&self, id: i64) -> usize {
        self.0
            .lock()
            .unwrap()
            .keys()
            .filter(|(job, _)| *job == id)
            .count()
    }
    fn twice_under_one_generation(&self) -> Vec<(i64, i64)> {
        let sends = self.0.lock().unwrap();
        sends
            .iter()
            .filter(|(_, n)| **n > 1)
            .map(|(k, _)| *k)
            .collect()
    }
}

async fn wait_until(client: &Client, sql: &str, within: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < within {
        if client.query_one(sql, &[]).await.unwrap().get::<_, bool>(0) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

const ALL_SENT: &str = "SELECT bool_and(status = 'sent') FROM send_jobs";

/// Ends the one connection whose application_name is `name`, as a crash or a DBA would.
/// Through a pooler (`SENDJOBS_WORKER_TEST_POOLER_ADMIN`, its admin console), the
/// pooler's `KILL` of the database ends every worker connection to it instead.
async fn kill_connection(db: &Client, name: &str) {
    if let Ok(admin) = std::env::var("SENDJOBS_WORKER_TEST_POOLER_ADMIN") {
        let database: String = db
            .query_one("SELECT current_database()::text", &[])
            .await
            .unwrap()
            .get(0);
        let console = connect(&admin).await;
        for command in [format!("KILL {database}"), format!("RESUME {database}")] {
            console.simple_query(&command).await.unwrap();
        }
        return;
    }
    let sql =
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1";
    let killed: i64 = db.query_one(sql, &[&name]).await.unwrap().get(0);
    assert_eq!(killed, 1, "connections named {name}");
}

type Running = (oneshot::Sender<()>, JoinHandle<sendjobs_client::Result<()>>);

/// A worker sending the database's jobs (each send takes 1 s), once it holds them all,
/// and an idle one beside it, both claiming in a loop: the two workers the stop tests cut
/// off from their database.
async fn sending_and_idle(db: &Client, sending: Config, idle: Config) -> [Running; 2] {
    let send = |_job: Job| async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        Outcome::Sent
    };
    let sending = start(Worker::new(sending).unwrap(), send);
    all_in_flight(db).await;
    let idle = start(Worker::new(idle).unwrap(), send);
    tokio::time::sleep(Duration::from_millis(300)).await;
    [sending, idle]
}

/// Stops the workers, each of which must then return `Ok` within `within`.
async fn stop_all<const N: usize>(workers: [Running; N], within: Duration) {
    let mut runs = Vec::new();
    for (stop, run) in workers {
        stop.send(()).unwrap();
        runs.push(run);
    }
    for run in runs {
        tokio::time::timeout(within, run)
            .await
            .expect("the worker stopped")
            .unwrap()
            .unwrap();
    }
}

/// Runs `worker` in a task until the returned sender fires.
fn start<T, S, F>(
    worker: Worker<T>,
    send: S,
) -> (oneshot::Sender<()>, JoinHandle<sendjobs_client::Result<()>>)
where
    T: serde::de::DeserializeOwned + Send + 'static,
    S: Fn(Job<T>) -> F + Send + Sync + 'static,
    F: Future<Output = Outcome> + Send + 'static,
{
    let (stop, stopped) = oneshot::channel::<()>();
    let run = tokio::spawn(worker.run(send, async {
        stopped.await.ok();
    }));
    (stop, run)
}

/// Waits until every job of the database is in flight (a worker holds them).
async fn all_in_flight(db: &Client) {
    let sql = "SELECT bool_and(status = 'in_flight') FROM send_jobs";
    assert!(
        wait_until(db, sql, Duration::from_secs(5)).await,
        "not all jobs were claimed"
    );
}

/// 300 jobs; worker B stalls (its whole runtime blocked, heartbeats included) on its
/// first job past the lease; worker A has its connection killed while a send runs.
/// Every job must end sent with one event, nothing sent twice under one generation, B's
/// late result refused as stale, and A's send that outlived its connection finalized.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a server with sendjobs installed: run through scripts/test.sh"]
async fn every_job_is_finished_once_through_a_killed_connection_and_a_stall() {
    let (dsn, db) = database("worker_kill_and_stall").await;
    enqueue(&db, 300).await;
    let partner = Partner::default();
    let lease = Duration::from_secs(2);

    // Worker B: its own single-threaded runtime, blocked for 2.5 leases by its first send.
    let (stop_b, stopped_b) = oneshot::channel::<()>();
    let b = {
        let (dsn, partner) = (dsn.clone(), partner.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let config = worker_config(dsn)
                .queue("q")
                .batch(1)
                .concurrency(1)
                .lease(lease)
                .poll_interval(Duration::from_millis(100))
                .application_name("worker-b");
            let worker = Worker::new(config).unwrap();
            let counters = worker.counters();
            let stalled = Arc::new(AtomicBool::new(false));
            let send = move |job: Job| {
                let (partner, stalled) = (partner.clone(), stalled.clone());
                async move {
                    if !stalled.swap(true, Ordering::SeqCst) {
                        std::thread::sleep(lease * 5 / 2); // blocks the runtime: no heartbeat
                    }
                    partner.record(&job);
                    Outcome::Sent
                }
            };
            runtime
                .block_on(worker.run(send, async {
                    stopped_b.await.ok();
                }))
                .unwrap();
            counters.snapshot()
        })
    };
    assert!(
        wait_until(
            &db,
            "SELECT count(*) = 1 FROM send_jobs WHERE status = 'in_flight'",
            Duration::from_secs(10)
        )
        .await
    );
    let stalled_id = scalar(&db, "SELECT id FROM send_jobs WHERE status = 'in_flight'").await;

    // Worker A: 10 sends at once; the send of job 100 takes 1.5 s, and its connection is
    // killed meanwhile.
    let killed_mid_send = Arc::new(tokio::sync::Notify::new());
    let config = worker_config(dsn.clone())
        .queue("q")
        .batch(10)
        .concurrency(10)
        .lease(lease)
        .poll_interval(Duration::from_millis(100))
        .reconnect_backoff(Duration::from_millis(50), Duration::from_millis(400))
        .application_name("worker-a");
    let worker = Worker::new(config).unwrap();
    let counters_a = worker.counters();
    let send = {
        let (partner, killed) = (partner.clone(), killed_mid_send.clone());
        move |job: Job| {
            let (partner, killed) = (partner.clone(), killed.clone());
            async move {
                if job.payload["n"] == 100 && job.attempts == 1 {
                    killed.notify_one();
                    tokio::time::sleep(Duration::from_millis(1500)).await;
                } else {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                partner.record(&job);
                Outcome::Sent
            }
        }
    };
    let (stop_a, a) = start(worker, send);
    killed_mid_send.notified().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    kill_connection(&db, "worker-a").await;

    assert!(
        wait_until(&db, ALL_SENT, Duration::from_secs(60)).await,
        "every job sent"
    );
    stop_a.send(()).unwrap();
    let counters_a = {
        a.await.unwrap().unwrap();
        counters_a.snapshot()
    };
    stop_b.send(()).unwrap();
    let counters_b = b.join().unwrap();

    assert_eq!(
        scalar(&db, "SELECT count(*) FROM send_job_events").await,
        300,
        "one event per job"
    );
    assert_eq!(
        scalar(&db, "SELECT count(DISTINCT job_id) FROM send_job_events").await,
        300
    );
    assert_eq!(
        partner.twice_under_one_generation(),
        vec![],
        "sent twice under one generation"
    );
    assert_eq!(
        partner.sends_of(stalled_id),
        2,
        "the stalled job: by B, then by A after the lease"
    );
    assert!(
        counters_b.stale >= 1,
        "B's late finalize refused: {counters_b:?}"
    );
    assert!(counters_a.reconnects >= 1, "A reconnected: {counters_a:?}");
    // The send that outlived its connection was finalized on the new one, on its first claim.
    let attempts_100 = scalar(
        &db,
        "SELECT attempts::int8 FROM send_jobs WHERE payload->>'n' = '100'",
    )
    .await;
    assert_eq!(attempts_100, 1);
}

/// Idle with a one-minute poll, the worker takes a job within a second of its enqueue:
/// the wake-up, not the poll.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a server with sendjobs installed: run through scripts/test.sh"]
async fn a_wakeup_ends_the_idle_wait() {
    let (dsn, db) = database("worker_wakeup").await;
    db.batch_execute("SELECT sendjobs_notify('q', true)")
        .await
        .unwrap();
    let config = worker_config(dsn)
        .queue("q")
        .poll_interval(Duration::from_secs(60));
    let worker = Worker::new(config).unwrap();
    let counters = worker.counters();
    let (stop, run) = start(worker, |_job| async { Outcome::Sent });
    tokio::time::sleep(Duration::from_millis(500)).await; // the first claim found nothing
    let enqueued = Instant::now();
    enqueue(&db, 1).await;
    assert!(wait_until(&db, ALL_SENT, Duration::from_secs(5)).await);
    assert!(enqueued.elapsed() < Duration::from_secs(2));
    stop.send(()).unwrap();
    run.await.unwrap().unwrap();
    assert_eq!(counters.snapshot().wakeups, 1);
}

/// A queue limited to 20 claims a second in bursts of 1, with a 30 s poll and no
/// wake-ups: after each short claim the worker asks the queue's limits and waits for the
/// next token, not the poll, so 30 jobs take about 1.5 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a server with sendjobs installed: run through scripts/test.sh"]
async fn a_rate_limited_queue_waits_for_its_next_token() {
    let (dsn, db) = database("worker_rate").await;
    db.batch_execute("SELECT sendjobs_limit('q', rate => 20, burst => 1)")
        .await
        .unwrap();
    enqueue(&db, 30).await;
    let config = worker_config(dsn)
        .queue("q")
        .batch(5)
        .listen(false)
        .poll_interval(Duration::from_secs(30));
    let worker = Worker::new(config).unwrap();
    let counters = worker.counters();
    let started = Instant::now();
    let (stop, run) = start(worker, |_job| async { Outcome::Sent });
    assert!(
        wait_until(&db, ALL_SENT, Duration::from_secs(15)).await,
        "30 jobs at 20 a second within 15 s (a worker that waits its poll takes minutes)"
    );
    let elapsed = started.elapsed();
    stop.send(()).unwrap();
    run.await.unwrap().unwrap();
    assert!(
        counters.snapshot().limited >= 1,
        "{:?}",
        counters.snapshot()
    );
    assert!(
        elapsed >= Duration::from_millis(1000),
        "faster than the rate: {elapsed:?}"
    );
}

/// A queue whose tokens come faster than any round trip (100,000 a second, bursts of 1): a
/// token is always back by the time the worker asks the limits after a short claim, so the
/// limits say "not limiting" every time. The worker claims again at once while its claims
/// take jobs (it waited its whole 30 s poll after the second such claim: 2 jobs a poll).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a server with sendjobs installed: run through scripts/test.sh"]
async fn a_token_back_before_the_limits_are_asked_does_not_stall_the_worker() {
    let (dsn, db) = database("worker_refill").await;
    db.batch_execute("SELECT sendjobs_limit('q', rate => 100000, burst => 1)")
        .await
        .unwrap();
    enqueue(&db, 40).await;
    let config = worker_config(dsn)
        .queue("q")
        .batch(5)
        .listen(false)
        .poll_interval(Duration::from_secs(30));
    let (stop, run) = start(Worker::new(config).unwrap(), |_job| async { Outcome::Sent });
    assert!(
        wait_until(&db, ALL_SENT, Duration::from_secs(15)).await,
        "40 jobs within 15 s (a worker that waits its poll after a token came back takes 10 minutes)"
    );
    stop.send(()).unwrap();
    run.await.unwrap().unwrap();
}

/// A job cancelled while its send runs: the next heartbeat answers stale and the send is
/// stopped (its future dropped), not finalized.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a server with sendjobs installed: run through scripts/test.sh"]
async fn a_lost_job_stops_its_send() {
    let (dsn, db) = database("worker_cancel").await;
    enqueue(&db, 1).await;
    let config = worker_config(dsn)
        .queue("q")
        .lease(Duration::from_millis(400));
    let worker = Worker::new(config).unwrap();
    let counters = worker.counters();
    let dropped = Arc::new(AtomicBool::new(false));
    struct OnDrop(Arc<AtomicBool>);
    impl Drop for OnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let send = {
        let dropped = dropped.clone();
        move |_job: Job| {
            let guard = OnDrop(dropped.clone());
            async move {
                let _guard = guard;
                tokio::time::sleep(Duration::from_secs(30)).await;
                Outcome::Sent
            }
        }
    };
    let (stop, run) = start(worker, send);
    all_in_flight(&db).await;
    assert_eq!(
        scalar(
            &db,
            "SELECT count(*) FROM send_jobs WHERE sendjobs_cancel(id) = 'applied'"
        )
        .await,
        1
    );
    let start = Instant::now();
    while !dropped.load(Ordering::SeqCst) && start.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(dropped.load(Ordering::SeqCst), "the send was stopped");
    stop.send(()).unwrap();
    run.await.unwrap().unwrap();
    assert_eq!(counters.snapshot().stale, 1);
    assert_eq!(
        scalar(
            &db,
            "SELECT count(*) FROM send_job_events WHERE kind = 'cancelled'"
        )
        .await,
        1
    );
}

/// Shutdown: `Finish` lets a running send end and finalizes it; `Abandon` stops it and
/// hands the job back, due now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a server with sendjobs installed: run through scripts/test.sh"]
async fn shutdown_finishes_or_abandons_running_sends() {
    for (mode, name) in [
        (Shutdown::Finish, "worker_finish"),
        (Shutdown::Abandon, "worker_abandon"),
    ] {
        let (dsn, db) = database(name).await;
        enqueue(&db, 1).await;
        let config = worker_config(dsn).queue("q").shutdown(mode);
        let worker = Worker::new(config).unwrap();
        let send = |_job: Job| async {
            tokio::time::sleep(Duration::from_secs(2)).await;
            Outcome::Sent
        };
        let (stop, run) = start(worker, send);
        all_in_flight(&db).await;
        let asked = Instant::now();
        stop.send(()).unwrap();
        run.await.unwrap().unwrap();
        let row = db
            .query_one(
                "SELECT status, coalesce(last_error, ''), next_attempt_at <= now() FROM send_jobs",
                &[],
            )
            .await
            .unwrap();
        let (status, error, due): (String, String, bool) = (row.get(0), row.get(1), row.get(2));
        match mode {
            Shutdown::Finish => {
                assert_eq!(status, "sent");
                assert!(asked.elapsed() >= Duration::from_millis(1500));
            }
            Shutdown::Abandon => {
                assert_eq!((status.as_str(), due), ("pending", true), "{error}");
                assert!(error.contains("abandoned at shutdown"), "{error}");
                assert!(asked.elapsed() < Duration::from_secs(1));
            }
            // Shutdown is non_exhaustive: a mode added later needs its own check here.
            other => unreachable!("no check for {other:?}"),
        }
    }
}

/// A typed worker: each payload that fits the type reaches the send decoded; one that
/// does not is never sent, and ends `failed` with serde's reason as its last error (one
/// event each), counted as undecodable and as failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a server with sendjobs installed: run through scripts/test.sh"]
async fn a_typed_worker_fails_the_payloads_that_do_not_decode() {
    #[derive(serde::Deserialize)]
    struct Email {
        to: String,
        #[serde(default)]
        subject: Option<String>,
    }
    let (dsn, db) = database("worker_typed").await;
    db.batch_execute(
        r#"SELECT sendjobs_enqueue('{"to": "a@example.com", "subject": "hi"}', 'q');
           SELECT sendjobs_enqueue('{"to": "b@example.com"}', 'q');
           SELECT sendjobs_enqueue('{"subject": "to no one"}', 'q');
           SELECT sendjobs_enqueue('{"to": 7}', 'q')"#,
    )
    .await
    .unwrap();
    let worker = Worker::<Email>::typed(worker_config(dsn).queue("q")).unwrap();
    let counters = worker.counters();
    let received = Arc::new(Mutex::new(Vec::new()));
    let send = {
        let received = received.clone();
        move |job: Job<Email>| {
            received
                .lock()
                .unwrap()
                .push((job.payload.to, job.payload.subject));
            async { Outcome::Sent }
        }
    };
    let (stop, run) = start(worker, send);
    let finished = "SELECT bool_and(status IN ('sent', 'failed')) FROM send_jobs";
    assert!(wait_until(&db, finished, Duration::from_secs(10)).await);
    stop.send(()).unwrap();
    run.await.unwrap().unwrap();

    let rows = db
        .query(
            "SELECT status, coalesce(last_error, '') FROM send_jobs ORDER BY id",
            &[],
        )
        .await
        .unwrap();
    let jobs: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    let statuses: Vec<&str> = jobs.iter().map(|(status, _)| status.as_str()).collect();
    assert_eq!(statuses, ["sent", "sent", "failed", "failed"], "{jobs:?}");
    for ((_, error), reason) in jobs[2..].iter().zip([
        "missing field `to`",
        "invalid type: integer `7`, expected a string",
    ]) {
        assert!(
            error.starts_with("sendjobs-worker: the payload does not decode as ")
                && error.contains(reason),
            "{error}"
        );
    }
    let mut received = received.lock().unwrap().clone();
    received.sort();
    assert_eq!(
        received,
        [
            ("a@example.com".to_string(), Some("hi".to_string())),
            ("b@example.com".to_string(), None)
        ]
    );
    assert_eq!(
        scalar(
            &db,
            "SELECT count(*) FROM send_job_events WHERE kind = 'failed'"
        )
        .await,
        2
    );
    let counters = counters.snapshot();
    assert_eq!(
        (
            counters.claimed,
            counters.sent,
            counters.failed,
            counters.undecodable
        ),
        (4, 2, 2, 2),
        "{counters:?}"
    );
}

/// A claim the server refuses for good (a batch above sendjobs.max_batch) stops the
/// worker with the server's SQLSTATE, rather than retrying for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a server with sendjobs installed: run through scripts/test.sh"]
async fn a_refused_claim_is_an_error_with_its_sqlstate() {
    let (dsn, _db) = database("worker_refused").await;
    let worker = Worker::new(worker_config(dsn).batch(1_000_001).concurrency(1_000_001)).unwrap();
    let run = worker.run(|_job| async { Outcome::Sent }, std::future::pending());
    let error = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("the worker stopped")
        .unwrap_err();
    assert_eq!(
        error.sqlstate(),
        Some(&SqlState::INVALID_PARAMETER_VALUE),
        "{error}"
    );
}

/// A call cut by a lost connection is made again on a new one: the finalize waits on a
/// row lock the test holds, the test kills the worker's connection under it, and the
/// finalize must apply once the lock is released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a server with sendjobs installed: run through scripts/test.sh"]
async fn a_call_cut_by_a_lost_connection_is_made_again() {
    let (dsn, db) = database("worker_cut_call").await;
    let locker = connect(&dsn).await;
    enqueue(&db, 1).await;
    let config = worker_config(dsn)
        .queue("q")
        .reconnect_backoff(Duration::from_millis(50), Duration::from_millis(400))
        .application_name("worker-cut");
    let worker = Worker::new(config).unwrap();
    let counters = worker.counters();
    let go = Arc::new(tokio::sync::Notify::new());
    let send = {
        let go = go.clone();
        move |_job: Job| {
            let go = go.clone();
            async move {
                go.notified().await;
                Outcome::Sent
            }
        }
    };
    let (stop, run) = start(worker, send);
    all_in_flight(&db).await;
    locker
        .batch_execute("BEGIN; SELECT FROM send_jobs FOR UPDATE")
        .await
        .unwrap();
    go.notify_one();
    let waiting = "SELECT count(*) = 1 FROM pg_stat_activity \
                   WHERE application_name = 'worker-cut' AND wait_event_type = 'Lock'";
    assert!(
        wait_until(&db, waiting, Duration::from_secs(5)).await,
        "the finalize waits"
    );
    kill_connection(&db, "worker-cut").await;
    assert!(
        wait_until(&db, waiting, Duration::from_secs(5)).await,
        "made again, it waits again"
    );
    locker.batch_execute("COMMIT").await.unwrap();
    assert!(wait_until(&db, ALL_SENT, Duration::from_secs(5)).await);
    stop.send(()).unwrap();
    run.await.unwrap().unwrap();
    let counters = counters.snapshot();
    assert_eq!(
        (counters.sent, counters.reconnects, counters.errors),
        (1, 1, 0),
        "{counters:?}"
    );
}

/// A stop while the database is away ends the worker: a worker whose send is running
/// gives up its finalize once a lease has passed since the stop, an idle one gives up
/// its claim at once. Directly only: the database stops taking connections
/// (`ALLOW_CONNECTIONS false`) and the workers' connections are ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a server with sendjobs installed: run through scripts/test.sh"]
async fn a_stop_while_the_database_is_away_ends_the_worker() {
    let (dsn, db) = database("worker_away").await;
    enqueue(&db, 1).await;
    let lease = Duration::from_secs(2);
    let config = |name: &str| {
        worker_config(dsn.clone())
            .queue("q")
            .lease(lease)
            .poll_interval(Duration::from_millis(100))
            .application_name(name)
    };
    let workers = sending_and_idle(&db, config("away-sending"), config("away-idle")).await;
    let base = std::env::var("SENDJOBS_WORKER_TEST_DSN").unwrap();
    let admin = connect(&format!("{base} dbname=postgres")).await;
    admin
        .batch_execute(
            "ALTER DATABASE worker_away ALLOW_CONNECTIONS false;
             SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'away-%'",
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await; // the idle one is claiming again
    let asked = Instant::now();
    stop_all(workers, lease + Duration::from_secs(3)).await;
    let waited = asked.elapsed();
    let status: String = db
        .query_one("SELECT status FROM send_jobs", &[])
        .await
        .unwrap()
        .get(0);
    admin
        .batch_execute("ALTER DATABASE worker_away ALLOW_CONNECTIONS true")
        .await
        .unwrap();
    assert_eq!(
        status, "in_flight",
        "the finalize given up leaves its job to its lease"
    );
    assert!(
        waited >= lease,
        "the finalize was tried for a lease: {waited:?}"
    );
}

/// Over TLS: a worker given a connector that trusts the server's CA finishes its jobs on
/// a TLS connection (no sslmode given: a connector makes TLS required); one whose
/// connector trusts only the system's roots is refused at its first connection (the
/// certificate is checked, not skipped for plain text as `sslmode=prefer` would). tests/workers/check.py turns TLS on in its throwaway cluster with a CA
/// of its own, and names the CA and a TCP connection string in
/// `SENDJOBS_WORKER_TEST_TLS_CA` and `SENDJOBS_WORKER_TEST_TLS_DSN`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a server with TLS on: run through tests/workers/check.py"]
async fn a_worker_connects_over_tls() {
    use sendjobs_client::native_tls::{Certificate, TlsConnector};
    let ca = std::env::var("SENDJOBS_WORKER_TEST_TLS_CA").expect("SENDJOBS_WORKER_TEST_TLS_CA");
    let tcp = std::env::var("SENDJOBS_WORKER_TEST_TLS_DSN").expect("SENDJOBS_WORKER_TEST_TLS_DSN");
    let (_, db) = database("worker_tls").await;
    enqueue(&db, 3).await;
    let dsn = format!("{tcp} dbname=worker_tls");

    let untrusting = TlsConnector::new().unwrap();
    let refused = Worker::new(Config::new(dsn.clone()).tls(untrusting))
        .unwrap()
        .run(|_job| async { Outcome::Sent }, std::future::pending());
    let error = tokio::time::timeout(Duration::from_secs(10), refused)
        .await
        .expect("the first connection fails at once")
        .unwrap_err();
    let mut chain = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(e) = source {
        chain += &format!(": {e}");
        source = e.source();
    }
    assert!(chain.contains("certificate verify failed"), "{chain}");

    let ca = Certificate::from_pem(&std::fs::read(ca).unwrap()).unwrap();
    let trusting = TlsConnector::builder()
        .add_root_certificate(ca)
        .build()
        .unwrap();
    let config = Config::new(dsn)
        .tls(trusting)
        .application_name("tls-worker");
    let (stop, run) = start(Worker::new(config).unwrap(), |_job| async { Outcome::Sent });
    assert!(wait_until(&db, ALL_SENT, Duration::from_secs(10)).await);
    let on_tls = "SELECT count(*) FILTER (WHERE s.ssl)::int8 FROM pg_stat_activity a \
                  JOIN pg_stat_ssl s USING (pid) WHERE a.application_name = 'tls-worker'";
    assert_eq!(
        scalar(&db, on_tls).await,
        1,
        "the worker's one connection uses TLS"
    );
    stop.send(()).unwrap();
    run.await.unwrap().unwrap();
}

/// A worker given a TLS connector does not fall back to plain text: against a server
/// without TLS (the cluster before tests/workers/check.py turns TLS on), its first
/// connection fails, where `sslmode=prefer`, the connection string's default, would
/// have connected in the clear.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a server without TLS on TCP: run through tests/workers/check.py"]
async fn a_tls_worker_refuses_a_server_without_tls() {
    let tcp = std::env::var("SENDJOBS_WORKER_TEST_TLS_DSN").expect("SENDJOBS_WORKER_TEST_TLS_DSN");
    let (_, _db) = database("worker_no_tls").await;
    let connector = sendjobs_client::native_tls::TlsConnector::new().unwrap();
    let config = Config::new(format!("{tcp} dbname=worker_no_tls")).tls(connector);
    let run = Worker::new(config)
        .unwrap()
        .run(|_job| async { Outcome::Sent }, std::future::pending());
    let error = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("the first connection fails at once")
        .unwrap_err();
    assert!(error.to_string().contains("TLS"), "{error}");
}

/// A TCP proxy to `target` that, once `frozen` is set, forwards nothing more and closes
/// nothing: a server that no longer answers (a partition, a hung host).
async fn frozen_proxy(target: String, frozen: Arc<AtomicBool>) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = tokio::net::TcpStream::connect(&target).await else {
                return;
            };
            let (client_read, client_write) = client.into_split();
            let (server_read, server_write) = server.into_split();
            for (mut from, mut to) in [(client_read, server_write), (server_read, client_write)] {
                let frozen = frozen.clone();
                tokio::spawn(async move {
                    let mut buffer = vec![0u8; 65536];
                    while let Ok(n @ 1..) = from.read(&mut buffer).await {
                        while frozen.load(Ordering::SeqCst) {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                        if to.write_all(&buffer[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        }
    });
    port
}

/// A stop while the server no longer answers ends the worker within a lease: the batch
/// finalize of a worker whose 40 sends ended (then made again one by one, each given up
/// at once), and the claim of an idle one, wait for an answer that does not come (no
/// refusal, no reset: a proxy holds every byte).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a server with sendjobs installed: run through scripts/test.sh"]
async fn a_stop_while_the_server_is_silent_ends_the_worker() {
    let (_, db) = database("worker_silent").await;
    enqueue(&db, 40).await;
    let base: tokio_postgres::Config = std::env::var("SENDJOBS_WORKER_TEST_DSN")
        .unwrap()
        .parse()
        .unwrap();
    let frozen = Arc::new(AtomicBool::new(false));
    let target = format!("127.0.0.1:{}", base.get_ports()[0]);
    let port = frozen_proxy(target, frozen.clone()).await;
    let lease = Duration::from_secs(2);
    let config = |queue: &str| {
        Config::new(format!(
            "host=127.0.0.1 port={port} user=postgres dbname=worker_silent"
        ))
        .queue(queue)
        .batch(40)
        .concurrency(40)
        .lease(lease)
        .poll_interval(Duration::from_millis(100))
    };
    let workers = sending_and_idle(&db, config("q"), config("nothing")).await;
    frozen.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(1200)).await; // the send has ended
    stop_all(workers, lease + Duration::from_secs(3)).await;
    let in_flight = "SELECT count(*) FROM send_jobs WHERE status = 'in_flight'";
    assert_eq!(
        scalar(&db, in_flight).await,
        40,
        "the finalizes given up leave their jobs to their leases"
    );
}
