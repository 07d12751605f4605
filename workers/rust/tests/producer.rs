//! The producer against the real extension: a job added in the caller's transaction
//! commits with the business write, or goes with it. Each test makes its own database in
//! the server that `SENDJOBS_WORKER_TEST_DSN` names (scripts/test.sh runs these with
//! `--include-ignored`).

use std::time::{Duration, SystemTime};

use sendjobs_client::{enqueue, enqueue_many, NewJob, Producer};
use serde_json::json;
use tokio_postgres::{Client, NoTls};

/// A fresh database with the extension and a business table; its connection string and a
/// client.
async fn database(name: &str) -> (String, Client) {
    let base = std::env::var("SENDJOBS_WORKER_TEST_DSN").expect("SENDJOBS_WORKER_TEST_DSN");
    let admin = connect(&format!("{base} dbname=postgres")).await;
    for sql in [
        format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        format!("CREATE DATABASE {name}"),
    ] {
        admin.batch_execute(&sql).await.unwrap();
    }
    let dsn = format!("{base} dbname={name}");
    let client = connect(&dsn).await;
    client
        .batch_execute(
            "CREATE EXTENSION sendjobs;
             CREATE TABLE payments (id text PRIMARY KEY, amount int NOT NULL)",
        )
        .await
        .unwrap();
    (dsn, client)
}

async fn connect(dsn: &str) -> Client {
    let (client, connection) = tokio_postgres::connect(dsn, NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

async fn count(client: &Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).await.unwrap().get(0)
}

#[tokio::test]
#[ignore = "needs a server with sendjobs installed: run through scripts/test.sh"]
async fn a_job_commits_with_its_business_write_and_goes_with_its_rollback() {
    let (_, mut db) = database("producer_transaction").await;

    let tx = db.transaction().await.unwrap();
    tx.execute("INSERT INTO payments VALUES ('p-1', 10)", &[])
        .await
        .unwrap();
    let job = NewJob::new(json!({"to": "acme", "amount": 10}))
        .queue("acme")
        .transaction_id("p-1")
        .idempotency_key("p-1/notify");
    enqueue(&tx, &job).await.unwrap();
    tx.rollback().await.unwrap();
    assert_eq!(count(&db, "SELECT count(*) FROM payments").await, 0);
    assert_eq!(count(&db, "SELECT count(*) FROM send_jobs").await, 0);

    let tx = db.transaction().await.unwrap();
    tx.execute("INSERT INTO payments VALUES ('p-1', 10)", &[])
        .await
        .unwrap();
    let id = enqueue(&tx, &job).await.unwrap();
    // The same key again in the same transaction: the same job.
    assert_eq!(enqueue(&tx, &job).await.unwrap(), id);
    tx.commit().await.unwrap();
    let row = db
        .query_one(
            "SELECT queue, transaction_id, payload->>'to' FROM send_jobs WHERE id = $1",
            &[&id],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "acme");
    assert_eq!(row.get::<_, String>(1), "p-1");
    assert_eq!(row.get::<_, String>(2), "acme");
}

#[tokio::test]
#[ignore = "needs a server with sendjobs installed: run through scripts/test.sh"]
async fn many_jobs_in_one_call_keep_their_order_and_settings() {
    let (_, mut db) = database("producer_many").await;
    let in_an_hour = SystemTime::now() + Duration::from_secs(3600);
    let jobs = [
        NewJob::new(json!({"n": 1}))
            .queue("a")
            .ordering_key("acct-7"),
        NewJob::new(json!({"n": 2}))
            .queue("a")
            .ordering_key("acct-7")
            .max_attempts(2),
        NewJob::new(json!({"n": 3}))
            .queue("b")
            .run_at(in_an_hour)
            .priority(5),
        NewJob::new(json!({"n": 4})).run_after(Duration::from_secs(600)),
    ];
    let tx = db.transaction().await.unwrap();
    let ids = enqueue_many(&tx, &jobs).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(ids.len(), 4);
    assert!(
        ids.windows(2).all(|pair| pair[0] < pair[1]),
        "ids in order: {ids:?}"
    );
    let rows = db
        .query(
            "SELECT (payload->>'n')::int, queue, ordering_key, max_attempts, priority::int,
                    next_attempt_at > now() + interval '50 minutes' AS in_an_hour,
                    next_attempt_at BETWEEN now() + interval '9 minutes' AND now() + interval '11 minutes' AS in_ten
               FROM send_jobs WHERE id = ANY($1) ORDER BY id",
            &[&ids],
        )
        .await
        .unwrap();
    // n, queue, ordering key, max attempts, priority, due in an hour, due in ten minutes
    type Added = (i32, String, Option<String>, i32, i32, bool, bool);
    let got: Vec<Added> = rows
        .iter()
        .map(|r| {
            (
                r.get(0),
                r.get(1),
                r.get(2),
                r.get(3),
                r.get(4),
                r.get(5),
                r.get(6),
            )
        })
        .collect();
    let acct = Some("acct-7".to_owned());
    assert_eq!(
        got,
        vec![
            (1, "a".into(), acct.clone(), 5, 0, false, false),
            (2, "a".into(), acct, 2, 0, false, false),
            (3, "b".into(), None, 5, 5, true, false),
            (4, "default".into(), None, 5, 0, false, true),
        ]
    );

    // A bad job anywhere adds none, and says which.
    let bad = [NewJob::new(json!({})), NewJob::new(json!({})).priority(61)];
    let error = enqueue_many(&db, &bad).await.unwrap_err();
    assert_eq!(
        error.code(),
        Some(&tokio_postgres::error::SqlState::INVALID_PARAMETER_VALUE)
    );
    assert_eq!(count(&db, "SELECT count(*) FROM send_jobs").await, 4);
}

#[tokio::test]
#[ignore = "needs a server with sendjobs installed: run through scripts/test.sh"]
async fn a_producer_names_the_schema_of_the_extension() {
    let (_, db) = database("producer_schema").await;
    db.batch_execute(
        "DROP EXTENSION sendjobs; CREATE SCHEMA \"job queue\"; CREATE EXTENSION sendjobs SCHEMA \"job queue\"",
    )
    .await
    .unwrap();
    let producer = Producer::in_schema("job queue");
    let id = producer
        .enqueue(&db, &NewJob::new(json!({"n": 1})))
        .await
        .unwrap();
    let ids = producer
        .enqueue_many(&db, &[NewJob::new(json!({"n": 2}))])
        .await
        .unwrap();
    assert!(ids[0] > id);
    // Unqualified, the search_path does not find it.
    assert!(enqueue(&db, &NewJob::new(json!({}))).await.is_err());
}

#[cfg(feature = "sqlx")]
#[tokio::test]
#[ignore = "needs a server with sendjobs installed: run through scripts/test.sh"]
async fn on_sqlx_a_job_commits_with_its_business_write_and_goes_with_its_rollback() {
    use sqlx::postgres::PgPoolOptions;

    let (dsn, db) = database("producer_sqlx").await;
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .connect_with(sqlx_options(&dsn))
        .await
        .unwrap();

    let mut tx = pool.begin().await.unwrap();
    sqlx::query("INSERT INTO payments VALUES ('p-1', 10)")
        .execute(&mut *tx)
        .await
        .unwrap();
    let job = NewJob::new(json!({"to": "acme"}))
        .queue("acme")
        .transaction_id("p-1");
    sendjobs_client::sqlx::enqueue(&mut *tx, &job)
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    assert_eq!(count(&db, "SELECT count(*) FROM send_jobs").await, 0);

    let mut tx = pool.begin().await.unwrap();
    sqlx::query("INSERT INTO payments VALUES ('p-1', 10)")
        .execute(&mut *tx)
        .await
        .unwrap();
    let id = sendjobs_client::sqlx::enqueue(&mut *tx, &job)
        .await
        .unwrap();
    let more = sendjobs_client::sqlx::enqueue_many(
        &mut *tx,
        &[
            NewJob::new(json!({"n": 1})),
            NewJob::new(json!({"n": 2})).queue("b"),
        ],
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(more.len(), 2);
    assert!(id < more[0] && more[0] < more[1]);
    assert_eq!(count(&db, "SELECT count(*) FROM send_jobs").await, 3);
    assert_eq!(count(&db, "SELECT count(*) FROM payments").await, 1);
}

/// sqlx's options from the libpq key=value string the tests are given (host, or a Unix
/// socket's folder as the host; port, user, dbname).
#[cfg(feature = "sqlx")]
fn sqlx_options(dsn: &str) -> sqlx::postgres::PgConnectOptions {
    let mut options = sqlx::postgres::PgConnectOptions::new_without_pgpass();
    for (key, value) in dsn
        .split_whitespace()
        .filter_map(|pair| pair.split_once('='))
    {
        options = match key {
            "host" if value.starts_with('/') => options.socket(value),
            "host" => options.host(value),
            "port" => options.port(value.parse().unwrap()),
            "user" => options.username(value),
            "dbname" => options.database(value),
            _ => options,
        };
    }
    options
}
