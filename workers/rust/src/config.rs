//! What a worker is told: where the database is, which queue, how much at once, how long.

use std::time::Duration;

use crate::error::{ConfigError, Setting};

/// What a worker does with the sends still running when it is told to stop.
///
/// Another way to stop may come in a minor release (`#[non_exhaustive]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Shutdown {
    /// Claim nothing more; let every running send finish (within its timeout) and
    /// finalize it. The default: nothing is sent twice because of a deploy.
    Finish,
    /// Stop the running sends at once and hand their jobs back (`retry`, due now), so
    /// another worker takes them without waiting for the lease. A send stopped midway may
    /// have reached the partner: its job will be sent again (at-least-once). A job on its
    /// last attempt is finished as `failed` instead, as the server does with any retry
    /// past `max_attempts`: for deploys, prefer `Finish`.
    Abandon,
}

/// The settings of a [`Worker`](crate::Worker). Start from [`Config::new`] and change
/// what differs from the defaults:
///
/// ```
/// use std::time::Duration;
/// let config = sendjobs_client::Config::new("host=/var/run/postgresql dbname=app user=app_worker")
///     .queue("acme")
///     .batch(20)
///     .lease(Duration::from_secs(30))
///     .send_timeout(Duration::from_secs(20));
/// ```
#[derive(Clone, Debug)]
pub struct Config {
    pub(crate) connection: String,
    pub(crate) schema: String,
    pub(crate) queue: Option<String>,
    pub(crate) batch: u32,
    pub(crate) concurrency: u32,
    pub(crate) lease: Duration,
    pub(crate) send_timeout: Duration,
    pub(crate) poll_interval: Duration,
    pub(crate) listen: bool,
    pub(crate) listen_check: Duration,
    pub(crate) listen_check_timeout: Duration,
    pub(crate) reconnect_min: Duration,
    pub(crate) reconnect_max: Duration,
    pub(crate) shutdown: Shutdown,
    pub(crate) application_name: String,
    pub(crate) tls: Option<native_tls::TlsConnector>,
}

impl Config {
    /// The shortest lease a worker accepts ([`Config::lease`]).
    pub const MIN_LEASE: Duration = Duration::from_millis(10);

    /// A worker for `connection`, a libpq-style connection string or URL
    /// (`host=... dbname=... user=...` or `postgres://user@host/db`), with these defaults:
    /// any queue, batches of 10, 10 sends at once, a 30-second lease, a 60-second send
    /// timeout, wake-ups by `LISTEN` with a poll every 5 seconds as a fallback and the
    /// connection checked every 2 s (answering within 3 s), reconnects backing off from
    /// 100 ms to 5 s, and [`Shutdown::Finish`].
    pub fn new(connection: impl Into<String>) -> Self {
        Self {
            connection: connection.into(),
            schema: "public".into(),
            queue: None,
            batch: 10,
            concurrency: 10,
            lease: Duration::from_secs(30),
            send_timeout: Duration::from_secs(60),
            poll_interval: Duration::from_secs(5),
            listen: true,
            listen_check: Duration::from_secs(2),
            listen_check_timeout: Duration::from_secs(3),
            reconnect_min: Duration::from_millis(100),
            reconnect_max: Duration::from_secs(5),
            shutdown: Shutdown::Finish,
            application_name: "sendjobs-worker".into(),
            tls: None,
        }
    }

    /// Connect over TLS with `connector` (a [`native_tls::TlsConnector`], re-exported as
    /// `sendjobs_client::native_tls`). Without it, the worker connects without TLS: over a
    /// Unix socket or a private network. With it, TLS is required over TCP: `prefer`, the
    /// connection string's default `sslmode`, becomes `require` (a server without TLS is
    /// refused); `sslmode=disable` connects without TLS; a Unix socket has none.
    /// The connector checks the server's certificate against the system's roots and its
    /// host name; a private CA is added with `add_root_certificate`:
    ///
    /// ```no_run
    /// use sendjobs_client::native_tls::{Certificate, TlsConnector};
    /// let ca = Certificate::from_pem(&std::fs::read("/etc/ssl/db-ca.pem")?)?;
    /// let config = sendjobs_client::Config::new("host=db.internal dbname=app user=app_worker")
    ///     .tls(TlsConnector::builder().add_root_certificate(ca).build()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn tls(mut self, connector: native_tls::TlsConnector) -> Self {
        self.tls = Some(connector);
        self
    }

    /// The schema the extension was created in (`CREATE EXTENSION sendjobs SCHEMA ...`);
    /// `public` by default. Every call names it, so the role's `search_path` does not matter.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// Take jobs of this queue only (by default, of any queue).
    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = Some(queue.into());
        self
    }

    /// Claim at most this many jobs per call (1 to the server's `sendjobs.max_batch`).
    pub fn batch(mut self, batch: u32) -> Self {
        self.batch = batch;
        self
    }

    /// Run at most this many sends at once. A claim asks only for free places, so a job
    /// never waits under a lease for a place to run.
    pub fn concurrency(mut self, concurrency: u32) -> Self {
        self.concurrency = concurrency;
        self
    }

    /// How long a claim holds a job before another worker may take it. While a send runs,
    /// the worker renews the lease every half lease (`sendjobs_heartbeat`), so the lease
    /// bounds how long a dead worker's jobs wait, not how long a send may take.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// A send still running after this long is stopped, and its job retried after the
    /// server's backoff, with the error "send timed out" (on its last attempt: `failed`).
    pub fn send_timeout(mut self, timeout: Duration) -> Self {
        self.send_timeout = timeout;
        self
    }

    /// With no job due, wait this long before claiming again (a wake-up ends the wait
    /// sooner). Also when a wake-up was missed: while reconnecting, or behind a pooler.
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// `LISTEN sendjobs_wakeup` (on by default): an enqueue into a queue whose
    /// wake-ups are on (`sendjobs_notify`) ends the idle wait at once. Turn it off behind a
    /// pooler in transaction mode, which does not keep a `LISTEN` on the connection.
    pub fn listen(mut self, listen: bool) -> Self {
        self.listen = listen;
        self
    }

    /// With `LISTEN` on, ask the connection `SELECT 1` every `every` when no call is in
    /// flight on it (2 s by default; `Duration::ZERO`: never), and drop it when it does
    /// not answer within `timeout` (3 s): a socket that hangs rather than closes (a
    /// partition, a frozen server) would otherwise lose every wake-up, silently, until the
    /// kernel gives it up. Dropped, its calls are made again on a new connection, and the
    /// worker claims at once. Not while a call is in flight: the answers come in order,
    /// and one waiting for a lock would hold the check's answer too.
    pub fn listen_check(mut self, every: Duration, timeout: Duration) -> Self {
        self.listen_check = every;
        self.listen_check_timeout = timeout;
        self
    }

    /// After a lost connection, wait `min` before reconnecting, doubling up to `max`.
    pub fn reconnect_backoff(mut self, min: Duration, max: Duration) -> Self {
        self.reconnect_min = min;
        self.reconnect_max = max;
        self
    }

    /// What to do with running sends when the shutdown future completes.
    pub fn shutdown(mut self, shutdown: Shutdown) -> Self {
        self.shutdown = shutdown;
        self
    }

    /// The `application_name` of the worker's connection (`pg_stat_activity` shows it).
    pub fn application_name(mut self, name: impl Into<String>) -> Self {
        self.application_name = name.into();
        self
    }

    /// The first setting that cannot work, if any: what [`Worker::new`](crate::Worker::new)
    /// refuses. Upper bounds (`sendjobs.max_batch`, `sendjobs.max_lease`) are the server's
    /// to set: a claim beyond them is refused with 22023.
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        let zero = [
            (Setting::Batch, self.batch == 0),
            (Setting::Concurrency, self.concurrency == 0),
            (Setting::SendTimeout, self.send_timeout.is_zero()),
            (Setting::PollInterval, self.poll_interval.is_zero()),
            (
                Setting::ListenCheckTimeout,
                !self.listen_check.is_zero() && self.listen_check_timeout.is_zero(),
            ),
        ];
        if let Some((setting, _)) = zero.into_iter().find(|(_, zero)| *zero) {
            return Err(ConfigError::Zero { setting });
        }
        if self.lease < Self::MIN_LEASE {
            return Err(ConfigError::LeaseTooShort { lease: self.lease });
        }
        if self.reconnect_min.is_zero() || self.reconnect_max < self.reconnect_min {
            return Err(ConfigError::ReconnectBackoff {
                min: self.reconnect_min,
                max: self.reconnect_max,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid() -> Config {
        Config::new("host=/nowhere")
    }

    /// Each setting that cannot work is refused with its own variant, carrying what was
    /// given, and a message that names the setting and the value.
    #[test]
    fn settings_that_cannot_work_are_refused_by_name() {
        let ms = Duration::from_millis;
        let cases = [
            (valid().batch(0), ConfigError::Zero { setting: Setting::Batch }, "batch must not be zero"),
            (
                valid().concurrency(0),
                ConfigError::Zero { setting: Setting::Concurrency },
                "concurrency must not be zero",
            ),
            (
                valid().send_timeout(Duration::ZERO),
                ConfigError::Zero { setting: Setting::SendTimeout },
                "send_timeout must not be zero",
            ),
            (
                valid().poll_interval(Duration::ZERO),
                ConfigError::Zero { setting: Setting::PollInterval },
                "poll_interval must not be zero",
            ),
            (
                valid().listen_check(ms(1), Duration::ZERO),
                ConfigError::Zero { setting: Setting::ListenCheckTimeout },
                "listen_check's timeout must not be zero",
            ),
            (
                valid().lease(ms(9)),
                ConfigError::LeaseTooShort { lease: ms(9) },
                "the lease must be at least 10ms, got 9ms",
            ),
            (
                valid().reconnect_backoff(Duration::ZERO, ms(5)),
                ConfigError::ReconnectBackoff { min: Duration::ZERO, max: ms(5) },
                "the reconnect backoff must be non-zero, its max at least its min, got 0ns to 5ms",
            ),
            (
                valid().reconnect_backoff(ms(200), ms(100)),
                ConfigError::ReconnectBackoff { min: ms(200), max: ms(100) },
                "the reconnect backoff must be non-zero, its max at least its min, got 200ms to 100ms",
            ),
        ];
        for (config, error, message) in cases {
            assert_eq!(config.validate(), Err(error), "{config:?}");
            assert_eq!(error.to_string(), message);
        }
    }

    /// The defaults work, and so do the least values each setting accepts.
    #[test]
    fn the_defaults_and_the_least_values_are_accepted() {
        assert_eq!(valid().validate(), Ok(()));
        let least = valid()
            .batch(1)
            .concurrency(1)
            .lease(Config::MIN_LEASE)
            .send_timeout(Duration::from_nanos(1))
            .poll_interval(Duration::from_nanos(1))
            .reconnect_backoff(Duration::from_nanos(1), Duration::from_nanos(1));
        assert_eq!(least.validate(), Ok(()));
    }

    /// Through the worker: a bad setting is `Error::Config`, its message prefixed by the
    /// crate's name, before any connection is tried.
    #[test]
    fn a_worker_with_a_bad_setting_is_not_made() {
        let error = crate::Worker::new(valid().batch(0)).expect_err("refused");
        assert!(
            matches!(
                error,
                crate::Error::Config(ConfigError::Zero {
                    setting: Setting::Batch
                })
            ),
            "{error:?}"
        );
        assert_eq!(error.to_string(), "sendjobs-worker: batch must not be zero");
    }
}
