//! The worker's connection, and the four calls it makes through it.
//!
//! Every call is one unnamed statement with its parameter types given
//! (`query_typed`): one round trip, and nothing prepared on the connection, so it works
//! behind PgBouncer in transaction mode (named prepared statements do not). No call
//! runs `SET`: the lease goes with each claim and heartbeat, so nothing leaks to the
//! next client of a pooled server connection.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use postgres_native_tls::MakeTlsConnector;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{watch, Mutex, Notify};
use tokio::task::AbortHandle;
use tokio::time::Instant;
use tokio_postgres::config::{Host, SslMode, TargetSessionAttrs};
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{AsyncMessage, Client, Connection, NoTls};

use crate::config::Config;
use crate::counters::{bump, Counters};
use crate::error::{Error, ProtocolError, Result};
use crate::job::{Job, Outcome};

/// What the server answers to a fenced call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    Applied,
    Stale,
}

impl Answer {
    fn parse(text: &str) -> Result<Self> {
        match text {
            "applied" => Ok(Self::Applied),
            "stale" => Ok(Self::Stale),
            other => Err(ProtocolError::UnexpectedAnswer {
                answer: other.into(),
            }
            .into()),
        }
    }
}

/// A queue's flow control after a short claim (`sendjobs_queue_limits`).
pub(crate) enum Flow {
    /// None (or the worker claims from any queue): the claim was short, the queue empty.
    None,
    /// Some, not limiting now: a token came since the claim, or the queue is empty.
    Free,
    /// Limiting, and when it may lift by itself (the next token; `None` for a pause or a
    /// reached cap, which a wake-up or the poll ends).
    Limited(Option<Duration>),
}

/// What a finalize made of its job, from its answer (`result`, `status`): a retry on the
/// job's last attempt is applied and fails it. A repeat of a finalize whose answer was
/// lost answers as the first call would have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Finalized {
    Sent,
    Failed,
    Retried,
    Stale,
}

impl Finalized {
    fn parse(result: &str, status: &str) -> Result<Self> {
        Ok(match (Answer::parse(result)?, status) {
            (Answer::Stale, _) => Self::Stale,
            (Answer::Applied, "sent") => Self::Sent,
            (Answer::Applied, "failed") => Self::Failed,
            (Answer::Applied, "pending") => Self::Retried,
            (Answer::Applied, other) => {
                return Err(ProtocolError::UnexpectedAnswer {
                    answer: format!("applied, {other}"),
                }
                .into())
            }
        })
    }
}

struct Statements {
    claim: String,
    heartbeat: String,
    finalize: String,
    finalize_sent: String,
    limits: String,
}

impl Statements {
    /// The extension's functions, qualified by its schema; `pg_catalog` for the rest
    /// (the role's `search_path` resolves nothing). The lease travels as seconds
    /// (float8) and becomes an interval on the server: tokio-postgres has no interval type.
    fn new(schema: &str) -> Self {
        let s = format!("\"{}\"", schema.replace('"', "\"\""));
        Self {
            claim: format!(
                "SELECT id, claim_generation, queue, payload, attempts, max_attempts, transaction_id, idempotency_key \
                   FROM {s}.sendjobs_claim($1, pg_catalog.make_interval(secs => $2), $3)"
            ),
            heartbeat: format!(
                "SELECT {s}.sendjobs_heartbeat($1, $2, pg_catalog.make_interval(secs => $3))"
            ),
            // retry_at: NULL (the server's backoff) when no delay is given; the server's
            // clock otherwise, as for every lease.
            // A batch of one, for its answer's status (what the job became).
            finalize: format!(
                "SELECT result, status FROM {s}.sendjobs_finalize_batch(ARRAY[$1::int8], ARRAY[$2::int8], $3, $4, \
                        pg_catalog.now() OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => $5))"
            ),
            finalize_sent: format!(
                "SELECT id, result FROM {s}.sendjobs_finalize_batch($1, $2, 'sent')"
            ),
            // After a short claim of its queue: limited (and until when) or empty.
            limits: format!(
                "SELECT limited, pg_catalog.date_part('epoch', retry_after) \
                   FROM {s}.sendjobs_queue_limits($1)"
            ),
        }
    }
}

/// One connection, opened again (with backoff) whenever a call finds it lost. Calls are
/// pipelined on it by tokio-postgres; a call that fails because the connection went away
/// is made again on the next one. Heartbeats and finalizes are fenced by (id,
/// generation), so making one twice changes nothing the first did not (a finalize made
/// again with the same outcome answers as the first did: a repeat); a claim whose answer
/// was lost leaves its jobs to their leases.
pub(crate) struct Db {
    config: Config,
    statements: Statements,
    current: Mutex<Option<Arc<Client>>>,
    /// Notified for each wake-up of the worker's queue (`LISTEN sendjobs_wakeup`).
    pub(crate) wakeup: Arc<Notify>,
    counters: Arc<Counters>,
    /// When the worker was told to stop: from then on, a call that finds the connection
    /// gone gives up rather than wait for the database for ever ([`Call`]).
    stopped_at: watch::Sender<Option<Instant>>,
    /// Calls sent and not answered yet: the connection's check waits for none
    /// ([`check_listening`]).
    in_flight: Arc<AtomicUsize>,
}

/// One call in flight, for as long as it lives (a call given up is dropped).
struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    fn new(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(count.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Which call, for how long it outlives a stop while the database is away.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Call {
    /// A claim is given up at once: a stopping worker wants no more jobs.
    Claim,
    /// A heartbeat or finalize, until a lease has passed since the stop: after that its
    /// job's lease has expired anyway (it comes back to be claimed again).
    Fenced,
}

impl Db {
    /// Connects once; fails at once if that fails (a wrong password is not retried).
    pub(crate) async fn connect(config: &Config, counters: Arc<Counters>) -> Result<Self> {
        let db = Self {
            config: config.clone(),
            statements: Statements::new(&config.schema),
            current: Mutex::new(None),
            wakeup: Arc::new(Notify::new()),
            counters,
            stopped_at: watch::Sender::new(None),
            in_flight: Arc::default(),
        };
        let client = db.open().await?;
        *db.current.lock().await = Some(client);
        Ok(db)
    }

    async fn open(&self) -> Result<Arc<Client>> {
        let mut pg: tokio_postgres::Config = self.config.connection.parse()?;
        pg.application_name(&self.config.application_name);
        // A server that stops answering (a network partition, a half-open connection)
        // is noticed, rather than waited for: connecting within 10 s, and, unless the
        // connection string says otherwise, TCP keepalives after 5 s idle, every 2 s, 3
        // unanswered, and data unacknowledged for 10 s given up (tcp_user_timeout).
        pg.connect_timeout(Duration::from_secs(10));
        if pg.get_keepalives_idle() == Duration::from_secs(2 * 60 * 60) {
            pg.keepalives_idle(Duration::from_secs(5)); // tokio-postgres's default: not set
        }
        if pg.get_keepalives_interval().is_none() {
            pg.keepalives_interval(Duration::from_secs(2));
        }
        if pg.get_keepalives_retries().is_none() {
            pg.keepalives_retries(3);
        }
        if pg.get_tcp_user_timeout().is_none() {
            pg.tcp_user_timeout(Duration::from_secs(10));
        }
        // After a failover, of the hosts listed the one that takes writes: not a demoted
        // primary, not a standby (`SHOW transaction_read_only` on each, as libpq does).
        if pg.get_target_session_attrs() == TargetSessionAttrs::Any {
            pg.target_session_attrs(TargetSessionAttrs::ReadWrite);
        }
        // A worker given a TLS connector wants TLS: `prefer` (the default) would fall back
        // to plain text when the server offers none. Not over a Unix socket, which has no
        // TLS (libpq ignores sslmode there; tokio-postgres would fail to connect).
        let tcp_only = pg.get_hosts().iter().all(|h| matches!(h, Host::Tcp(_)));
        if self.config.tls.is_some() && pg.get_ssl_mode() == SslMode::Prefer && tcp_only {
            pg.ssl_mode(SslMode::Require);
        }
        let (client, driver) = match &self.config.tls {
            None => {
                let (client, connection) = pg.connect(NoTls).await?;
                (client, self.drive(connection))
            }
            Some(tls) => {
                let (client, connection) = pg.connect(MakeTlsConnector::new(tls.clone())).await?;
                (client, self.drive(connection))
            }
        };
        let client = Arc::new(client);
        if self.config.listen {
            client.batch_execute("LISTEN sendjobs_wakeup").await?;
            if !self.config.listen_check.is_zero() {
                tokio::spawn(check_listening(
                    Arc::downgrade(&client),
                    driver,
                    self.in_flight.clone(),
                    (self.config.listen_check, self.config.listen_check_timeout),
                    self.wakeup.clone(),
                ));
            }
        }
        Ok(client)
    }

    /// Drives the connection in a task of its own, and passes on what the server sends
    /// unasked: wake-ups, and notices (the terminal guard's WARNING when it refuses a stamp).
    /// Aborting the task drops the connection: every call waiting on it fails as lost.
    fn drive<S, T>(&self, mut connection: Connection<S, T>) -> AbortHandle
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
        T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (wakeup, counters) = (self.wakeup.clone(), self.counters.clone());
        let queue = self.config.queue.clone();
        tokio::spawn(async move {
            loop {
                match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                    Some(Ok(AsyncMessage::Notification(n))) => {
                        if queue.as_deref().is_none_or(|q| q == n.payload()) {
                            bump(&counters.wakeups, 1);
                            wakeup.notify_one();
                        }
                    }
                    Some(Ok(AsyncMessage::Notice(notice))) => {
                        if notice.parsed_severity()
                            == Some(tokio_postgres::error::Severity::Warning)
                        {
                            bump(&counters.server_warnings, 1);
                        }
                        log::warn!(
                            "sendjobs-worker: server {}: {}",
                            notice.severity(),
                            notice.message()
                        );
                    }
                    Some(Ok(_)) => {}
                    Some(Err(e)) => {
                        log::warn!("sendjobs-worker: connection lost: {e}");
                        break;
                    }
                    None => break,
                }
            }
            // The connection is gone, and with it the wake-ups: the worker claims at once,
            // which connects again, rather than after its poll (a failover: a 30 s poll
            // found the new primary 28 s after Patroni's promotion; tests/workers/under_patroni.py).
            wakeup.notify_one();
        })
        .abort_handle()
    }

    /// The worker is stopping: calls that find the connection gone give up (see [`Call`]).
    pub(crate) fn stop(&self) {
        self.stopped_at.send_if_modified(|at| {
            let first = at.is_none();
            if first {
                *at = Some(Instant::now());
            }
            first
        });
    }

    fn gives_up(&self, call: Call) -> bool {
        self.stopped_at
            .borrow()
            .is_some_and(|at| call == Call::Claim || at.elapsed() > self.config.lease)
    }

    /// The open connection, or a new one: tried until it opens, backing off (or until
    /// the call gives up, the worker stopping).
    async fn client(&self, call: Call) -> Result<Arc<Client>> {
        let mut current = self.current.lock().await;
        if let Some(client) = current.as_ref().filter(|c| !c.is_closed()) {
            return Ok(client.clone());
        }
        let mut delay = self.config.reconnect_min;
        let mut stopped = self.stopped_at.subscribe();
        loop {
            // A stop ends the wait (once: then the budget of `call` decides).
            if stopped.borrow_and_update().is_none() {
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = stopped.changed() => {}
                }
            } else {
                tokio::time::sleep(delay).await;
            }
            if self.gives_up(call) {
                return Err(Error::GivenUp);
            }
            match self.open().await {
                Ok(client) => {
                    bump(&self.counters.reconnects, 1);
                    // A wake-up may have been missed while the connection was down.
                    self.wakeup.notify_one();
                    *current = Some(client.clone());
                    return Ok(client);
                }
                Err(e) => {
                    log::warn!("sendjobs-worker: reconnecting in {delay:?}: {e}");
                    delay = (delay * 2).min(self.config.reconnect_max);
                }
            }
        }
    }

    /// `work`, but once the worker is stopping only until a lease has passed since the
    /// stop: a database that stopped answering (a partition, a hung server) would
    /// otherwise keep the call, and the worker, waiting for the TCP timeouts.
    async fn until_deadline<T>(
        &self,
        work: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        tokio::pin!(work);
        let mut stopped = self.stopped_at.subscribe();
        loop {
            let at = *stopped.borrow_and_update();
            match at {
                None => tokio::select! {
                    out = &mut work => return out,
                    _ = stopped.changed() => {}
                },
                Some(at) => {
                    return tokio::time::timeout_at(at + self.config.lease, work)
                        .await
                        .unwrap_or(Err(Error::GivenUp))
                }
            }
        }
    }

    /// Runs `call` on the connection; on a lost connection, again on a new one.
    async fn run<T, F, Fut>(&self, kind: Call, call: F) -> Result<T>
    where
        F: Fn(Arc<Client>) -> Fut,
        Fut: std::future::Future<Output = std::result::Result<T, tokio_postgres::Error>>,
    {
        loop {
            let client = self.until_deadline(self.client(kind)).await?;
            let answer = self.until_deadline(async {
                let _in_flight = InFlight::new(&self.in_flight);
                call(client.clone()).await.map_err(Error::from)
            });
            match answer.await {
                Err(e) if e.is_connection_lost() => {
                    let mut current = self.current.lock().await;
                    if current.as_ref().is_some_and(|c| Arc::ptr_eq(c, &client)) {
                        *current = None;
                    }
                    if self.gives_up(kind) {
                        return Err(e);
                    }
                }
                other => return other,
            }
        }
    }

    async fn query(
        &self,
        kind: Call,
        sql: &str,
        params: &[(&(dyn ToSql + Sync), Type)],
    ) -> Result<Vec<tokio_postgres::Row>> {
        self.run(kind, |client| async move {
            client.query_typed(sql, params).await
        })
        .await
    }

    pub(crate) async fn claim(&self, batch: u32) -> Result<Vec<Job>> {
        let batch = i32::try_from(batch).unwrap_or(i32::MAX);
        let lease = self.config.lease.as_secs_f64();
        let rows = self
            .query(
                Call::Claim,
                &self.statements.claim,
                &[
                    (&batch, Type::INT4),
                    (&lease, Type::FLOAT8),
                    (&self.config.queue, Type::TEXT),
                ],
            )
            .await?;
        rows.iter()
            .map(|row| {
                Ok(Job {
                    id: row.try_get(0)?,
                    generation: row.try_get(1)?,
                    queue: row.try_get(2)?,
                    payload: row.try_get(3)?,
                    attempts: row.try_get(4)?,
                    max_attempts: row.try_get(5)?,
                    transaction_id: row.try_get(6)?,
                    idempotency_key: row.try_get(7)?,
                })
            })
            .collect()
    }

    pub(crate) async fn heartbeat(&self, id: i64, generation: i64) -> Result<Answer> {
        let lease = self.config.lease.as_secs_f64();
        let rows = self
            .query(
                Call::Fenced,
                &self.statements.heartbeat,
                &[
                    (&id, Type::INT8),
                    (&generation, Type::INT8),
                    (&lease, Type::FLOAT8),
                ],
            )
            .await?;
        Answer::parse(single_text(&rows)?)
    }

    pub(crate) async fn finalize(
        &self,
        id: i64,
        generation: i64,
        outcome: &Outcome,
    ) -> Result<Finalized> {
        let (kind, error, after): (&str, Option<&str>, Option<f64>) = match outcome {
            Outcome::Sent => ("sent", None, None),
            Outcome::Failed { error } => ("failed", Some(error), None),
            Outcome::Retry { error, after } => (
                "retry",
                Some(error),
                after.map(|d: Duration| d.as_secs_f64()),
            ),
        };
        let rows = self
            .query(
                Call::Fenced,
                &self.statements.finalize,
                &[
                    (&id, Type::INT8),
                    (&generation, Type::INT8),
                    (&kind, Type::TEXT),
                    (&error, Type::TEXT),
                    (&after, Type::FLOAT8),
                ],
            )
            .await?;
        match rows.as_slice() {
            [row] => Finalized::parse(row.try_get(0)?, row.try_get(1)?),
            _ => Err(ProtocolError::RowCount { rows: rows.len() }.into()),
        }
    }

    /// After a short claim, what the worker's queue's flow control says now.
    pub(crate) async fn flow(&self) -> Result<Flow> {
        let Some(queue) = &self.config.queue else {
            return Ok(Flow::None);
        };
        let rows = self
            .query(Call::Claim, &self.statements.limits, &[(queue, Type::TEXT)])
            .await?;
        let Some(row) = rows.first() else {
            return Ok(Flow::None);
        };
        if row.try_get::<_, Option<String>>(0)?.is_none() {
            return Ok(Flow::Free);
        }
        Ok(Flow::Limited(row.try_get::<_, Option<f64>>(1)?.map(
            |seconds| Duration::from_secs_f64(seconds.max(0.005)),
        )))
    }

    /// `sendjobs_finalize_batch(ids, generations, 'sent')`: one answer per claim.
    pub(crate) async fn finalize_sent(&self, claims: &[(i64, i64)]) -> Result<Vec<(i64, Answer)>> {
        let ids: Vec<i64> = claims.iter().map(|c| c.0).collect();
        let generations: Vec<i64> = claims.iter().map(|c| c.1).collect();
        let rows = self
            .query(
                Call::Fenced,
                &self.statements.finalize_sent,
                &[(&ids, Type::INT8_ARRAY), (&generations, Type::INT8_ARRAY)],
            )
            .await?;
        rows.iter()
            .map(|row| Ok((row.try_get(0)?, Answer::parse(row.try_get(1)?)?)))
            .collect()
    }
}

/// Every `every`, `SELECT 1` on the connection that LISTENs (the worker's one connection)
/// when no call is in flight on it; one that does not answer within `timeout` (a socket
/// that hangs rather than closes: a partition, a frozen server) is dropped: its task is
/// aborted, so every call waiting on it fails as a lost connection and is made again on a
/// new one (which LISTENs again), and the worker claims at once rather than wait for a
/// wake-up that cannot come. Not while a call is in flight: answers come in order, and
/// a call waiting for a lock (a finalize behind a business row's) would hold the check's
/// answer too, and drop a connection that is fine.
async fn check_listening(
    client: Weak<Client>,
    driver: AbortHandle,
    in_flight: Arc<AtomicUsize>,
    (every, timeout): (Duration, Duration),
    wakeup: Arc<Notify>,
) {
    loop {
        tokio::time::sleep(every).await;
        let Some(client) = client.upgrade().filter(|c| !c.is_closed()) else {
            return; // replaced, or lost: the next call reconnects
        };
        if in_flight.load(Ordering::SeqCst) > 0 {
            continue;
        }
        match tokio::time::timeout(timeout, client.simple_query("SELECT 1")).await {
            Ok(Ok(_)) => {}
            Ok(Err(_)) => return,
            Err(_) => {
                log::warn!(
                    "sendjobs-worker: no answer to a check within {timeout:?}: connection dropped"
                );
                driver.abort();
                wakeup.notify_one();
                return;
            }
        }
    }
}

fn single_text(rows: &[tokio_postgres::Row]) -> Result<&str> {
    match rows {
        [row] => Ok(row.try_get(0)?),
        _ => Err(ProtocolError::RowCount { rows: rows.len() }.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two answers of a fenced call, and anything else a typed protocol error that
    /// carries it (an extension of another version).
    #[test]
    fn a_fenced_answer_is_applied_stale_or_a_protocol_error() {
        assert_eq!(Answer::parse("applied").unwrap(), Answer::Applied);
        assert_eq!(Answer::parse("stale").unwrap(), Answer::Stale);
        let error = Answer::parse("maybe").unwrap_err();
        assert!(
            matches!(&error, Error::Protocol(ProtocolError::UnexpectedAnswer { answer }) if answer == "maybe"),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "sendjobs-worker: unexpected answer from the server: a fenced call returned \"maybe\""
        );
        let rows = single_text(&[]).unwrap_err();
        assert!(
            matches!(rows, Error::Protocol(ProtocolError::RowCount { rows: 0 })),
            "{rows:?}"
        );
    }
}
