//! The console's connections and every statement it runs (the statements themselves are
//! in console/sql/, one file each).
//!
//! Each connection pins `search_path = pg_catalog, pg_temp` at connect (the startup
//! packet's options), and the statements name the extension's objects by its schema
//! (`@extschema@`, filled in with the quoted schema at each call): a function or operator
//! that a role planted in the extension's schema (often `public`) is never on the path,
//! where a better-matching overload would win over pg_catalog's whatever the order (an
//! attack review found `public.format(text, text)` and `public./(numeric, integer)`
//! would have run as the console's role). Times are read in
//! UTC. Every statement is unnamed with its parameter types given (`query_typed`): one
//! round trip, planned for its parameters' values, and nothing from a request is ever
//! part of a statement's text.

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::Row;

use crate::error::{DbError, StartError};

type DbResult<T> = Result<T, DbError>;

pub struct Db {
    pool: Pool,
    /// The extension's schema, quoted as an identifier.
    pub schema: String,
}

/// What the console's role may run and read (privileges.sql).
#[derive(Clone, Debug)]
pub struct Privileges {
    pub role: String,
    pub stats: bool,
    pub queue_limits: bool,
    pub redrive: bool,
    pub cancel: bool,
    pub pause: bool,
    pub resume: bool,
    pub unblock: bool,
    pub limit: bool,
    pub payload: bool,
    pub keys: bool,
    pub link: bool,
    /// May read sendjobs_blocked_keys (the ordering keys a failure stopped).
    pub blocked: bool,
    /// May read send_jobs_finished (the monitor level since 0.5.0): the chart and the
    /// failed jobs read it.
    pub finished: bool,
    /// May read send_job_attempts (monitor and admin since 0.5.0): a job's earlier attempts.
    pub attempts: bool,
}

impl Privileges {
    pub fn allowed_actions(&self) -> Vec<&'static str> {
        [
            ("redrive", self.redrive),
            ("cancel", self.cancel),
            ("pause", self.pause),
            ("resume", self.resume),
            ("unblock", self.unblock),
            ("limit", self.limit),
        ]
        .into_iter()
        .filter_map(|(name, allowed)| allowed.then_some(name))
        .collect()
    }
}

pub struct QueueStats {
    pub queue: String,
    pub ready: i64,
    pub scheduled: i64,
    pub in_flight: i64,
    pub expired: i64,
    pub at_last_attempt: i64,
    pub oldest_ready_age: Option<String>,
    pub sent_5m: i64,
    pub failed_5m: i64,
    pub cancelled_5m: i64,
    pub estimated: bool,
    pub dead_tuples: i64,
    pub oldest_xmin_age: Option<String>,
    pub paused: bool,
}

pub struct QueueLimits {
    pub queue: String,
    pub paused: bool,
    pub max_in_flight: Option<i32>,
    pub in_flight: i64,
    pub rate: Option<f64>,
    pub burst: Option<i32>,
    pub tokens: Option<f64>,
    pub limited: Option<String>,
    pub retry_after_s: Option<String>,
}

/// An ordering key a failure stopped (sendjobs_block_keys).
pub struct BlockedKey {
    pub ordering_key: String,
    /// The job that stops it: the failed job, or its redrive.
    pub job_id: i64,
    pub blocked_at: String,
}

/// One queue's minute of the hour's chart.
pub struct ChartPoint {
    pub queue: String,
    pub minutes_ago: i32,
    pub sent: i64,
    pub failed: i64,
}

/// An attempt that ended without finishing its job (send_job_attempts).
pub struct Attempt {
    pub claim_generation: i64,
    pub attempt: i32,
    pub claimed_at: String,
    pub ended_at: String,
    pub ended: String,
    pub error: Option<String>,
}

pub struct Job {
    pub id: i64,
    pub queue: String,
    pub status: String,
    pub transaction_id: Option<String>,
    pub idempotency_key: Option<String>,
    pub attempts: i32,
    pub max_attempts: i32,
    pub claim_generation: i64,
    pub next_attempt_at: String,
    pub claimed_at: Option<String>,
    pub lease_expires_at: Option<String>,
    pub lease_expired: Option<bool>,
    pub last_error: Option<String>,
    pub created_at: String,
    pub finished_at: Option<String>,
    pub redrive_of: Option<i64>,
    pub ordering_key: Option<String>,
    pub priority: i16,
}

pub struct Event {
    pub kind: String,
    pub claim_generation: i64,
    pub created_at: String,
    pub event_xid: String,
}

/// A job of a redrive chain.
pub struct ChainJob {
    pub id: i64,
    pub status: String,
}

pub struct Link {
    pub table: String,
    pub key_column: String,
    pub status_column: String,
    pub readable: bool,
    statement: String,
}

pub struct JobRow {
    pub id: i64,
    pub queue: String,
    pub status: String,
    pub attempts: i32,
    pub max_attempts: i32,
    pub claim_generation: i64,
    pub transaction_id: Option<String>,
    pub created_at: String,
    pub finished_at: Option<String>,
    pub last_error: Option<String>,
}

/// The search's filters, each None when not given.
#[derive(Default, Clone)]
pub struct Filters {
    pub queue: Option<String>,
    pub status: Option<String>,
    pub transaction_id: Option<String>,
    pub created_from: Option<String>,
    pub created_to: Option<String>,
}

pub struct FailedJob {
    pub id: i64,
    pub attempts: i32,
    pub claim_generation: i64,
    pub transaction_id: Option<String>,
    pub finished_at: String,
    pub cursor_at: String,
    pub last_error: Option<String>,
    pub redriven_as: Option<i64>,
}

pub struct Redriven {
    pub id: i64,
    pub new_id: i64,
    pub queue: String,
}

impl Db {
    pub async fn connect(url: &str, pool_size: usize) -> Result<Self, StartError> {
        let (url, tls) = crate::tls::split(url)?;
        let mut config: tokio_postgres::Config = url.parse().map_err(StartError::DatabaseUrl)?;
        if config.get_application_name().is_none() {
            config.application_name("sendjobs-console");
        }
        // A Unix socket has no TLS: libpq ignores sslmode there, where tokio-postgres would
        // refuse to connect.
        let unix_only = config
            .get_hosts()
            .iter()
            .all(|host| !matches!(host, tokio_postgres::config::Host::Tcp(_)));
        config.ssl_mode(if unix_only {
            tokio_postgres::config::SslMode::Disable
        } else {
            tls.mode.for_driver()
        });
        let connector = tls.connector()?;
        // The first connection, without the pinned path, only finds the schema (its one
        // statement qualifies every name).
        let (client, connection) = config
            .connect(connector.clone())
            .await
            .map_err(StartError::Connect)?;
        let driver = tokio::spawn(connection);
        let rows = client
            .query_typed(include_str!("../sql/extension_schema.sql"), &[])
            .await
            .map_err(DbError::from)?;
        drop(client);
        let _ = driver.await;
        let schema: String = rows.first().ok_or(StartError::NoExtension)?.get("schema");
        // A statement that runs away (a search by an unindexed column on a huge history)
        // is cut, never left holding a connection.
        config
            .options("-c search_path=pg_catalog,pg_temp -c TimeZone=UTC -c statement_timeout=10s");
        let manager = Manager::from_config(
            config,
            connector,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(pool_size)
            // A request waits this long for a connection, then fails (a few slow searches
            // must not queue every other request, an operator's pause among them).
            .wait_timeout(Some(std::time::Duration::from_secs(5)))
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .build()
            .map_err(|err| StartError::Pool(err.to_string()))?;
        Ok(Db { pool, schema })
    }

    /// Runs one of console/sql/'s statements, the extension's schema filled in.
    async fn query(&self, sql: &str, params: &[(&(dyn ToSql + Sync), Type)]) -> DbResult<Vec<Row>> {
        self.query_text(&sql.replace("@extschema@", &self.schema), params)
            .await
    }

    /// Runs a statement as it is (one built from the catalog's quoted names).
    async fn query_text(
        &self,
        sql: &str,
        params: &[(&(dyn ToSql + Sync), Type)],
    ) -> DbResult<Vec<Row>> {
        let client = self.pool.get().await?;
        Ok(client.query_typed(sql, params).await?)
    }

    pub async fn privileges(&self) -> DbResult<Privileges> {
        let rows = self
            .query(
                include_str!("../sql/privileges.sql"),
                &[(&self.schema, Type::TEXT)],
            )
            .await?;
        let row = &rows[0];
        Ok(Privileges {
            role: row.get("role"),
            stats: row.get("stats"),
            queue_limits: row.get("queue_limits"),
            redrive: row.get("redrive"),
            cancel: row.get("cancel"),
            pause: row.get("pause"),
            resume: row.get("resume"),
            unblock: row.get("unblock"),
            limit: row.get("limit"),
            payload: row.get("payload"),
            keys: row.get("keys"),
            link: row.get("link"),
            blocked: row.get("blocked"),
            finished: row.get("finished"),
            attempts: row.get("attempts"),
        })
    }

    pub async fn stats(&self) -> DbResult<Vec<QueueStats>> {
        let rows = self.query(include_str!("../sql/stats.sql"), &[]).await?;
        Ok(rows
            .iter()
            .map(|r| QueueStats {
                queue: r.get("queue"),
                ready: r.get("ready"),
                scheduled: r.get("scheduled"),
                in_flight: r.get("in_flight"),
                expired: r.get("expired"),
                at_last_attempt: r.get("at_last_attempt"),
                oldest_ready_age: r.get("oldest_ready_age"),
                sent_5m: r.get("sent_5m"),
                failed_5m: r.get("failed_5m"),
                cancelled_5m: r.get("cancelled_5m"),
                estimated: r.get("estimated"),
                dead_tuples: r.get("dead_tuples"),
                oldest_xmin_age: r.get("oldest_xmin_age"),
                paused: r.get("paused"),
            })
            .collect())
    }

    /// Flow control of every queue that has some (`queue` None), or of one.
    pub async fn queue_limits(&self, queue: Option<&str>) -> DbResult<Vec<QueueLimits>> {
        let rows = self
            .query(
                include_str!("../sql/queue_limits.sql"),
                &[(&queue, Type::TEXT)],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| QueueLimits {
                queue: r.get("queue"),
                paused: r.get("paused"),
                max_in_flight: r.get("max_in_flight"),
                in_flight: r.get("in_flight"),
                rate: r.get("rate"),
                burst: r.get("burst"),
                tokens: r.get("tokens"),
                limited: r.get("limited"),
                retry_after_s: r.get("retry_after_s"),
            })
            .collect())
    }

    pub async fn hour_chart(&self) -> DbResult<Vec<ChartPoint>> {
        let rows = self
            .query(include_str!("../sql/hour_chart.sql"), &[])
            .await?;
        Ok(rows
            .iter()
            .map(|r| ChartPoint {
                queue: r.get("queue"),
                minutes_ago: r.get("minutes_ago"),
                sent: r.get("sent"),
                failed: r.get("failed"),
            })
            .collect())
    }

    pub async fn job(&self, id: i64) -> DbResult<Option<Job>> {
        let rows = self
            .query(include_str!("../sql/job.sql"), &[(&id, Type::INT8)])
            .await?;
        Ok(rows.first().map(|r| Job {
            id: r.get("id"),
            queue: r.get("queue"),
            status: r.get("status"),
            transaction_id: r.get("transaction_id"),
            idempotency_key: r.get("idempotency_key"),
            attempts: r.get("attempts"),
            max_attempts: r.get("max_attempts"),
            claim_generation: r.get("claim_generation"),
            next_attempt_at: r.get("next_attempt_at"),
            claimed_at: r.get("claimed_at"),
            lease_expires_at: r.get("lease_expires_at"),
            lease_expired: r.get("lease_expired"),
            last_error: r.get("last_error"),
            created_at: r.get("created_at"),
            finished_at: r.get("finished_at"),
            redrive_of: r.get("redrive_of"),
            ordering_key: r.get("ordering_key"),
            priority: r.get("priority"),
        }))
    }

    pub async fn payload(&self, id: i64) -> DbResult<Option<String>> {
        let rows = self
            .query(include_str!("../sql/payload.sql"), &[(&id, Type::INT8)])
            .await?;
        Ok(rows.first().map(|r| r.get("payload")))
    }

    pub async fn event(&self, id: i64) -> DbResult<Option<Event>> {
        let rows = self
            .query(include_str!("../sql/job_event.sql"), &[(&id, Type::INT8)])
            .await?;
        Ok(rows.first().map(|r| Event {
            kind: r.get("kind"),
            claim_generation: r.get("claim_generation"),
            created_at: r.get("created_at"),
            event_xid: r.get("event_xid"),
        }))
    }

    /// A job's earlier attempts (job_attempts.sql), oldest first.
    pub async fn attempts(&self, id: i64) -> DbResult<Vec<Attempt>> {
        let rows = self
            .query(
                include_str!("../sql/job_attempts.sql"),
                &[(&id, Type::INT8)],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| Attempt {
                claim_generation: r.get("claim_generation"),
                attempt: r.get("attempt"),
                claimed_at: r.get("claimed_at"),
                ended_at: r.get("ended_at"),
                ended: r.get("ended"),
                error: r.get("error"),
            })
            .collect())
    }

    /// The redrive chain through `job`: the jobs it redrives (oldest first) and the ones
    /// that redrive it, each found by a primary key or a redrive_of index, at most
    /// `limit` each way.
    pub async fn redrive_chain(
        &self,
        job: &Job,
        limit: usize,
    ) -> DbResult<(Vec<ChainJob>, Vec<ChainJob>)> {
        let mut earlier = Vec::new();
        let mut next = job.redrive_of;
        while let (Some(id), true) = (next, earlier.len() < limit) {
            let rows = self
                .query(include_str!("../sql/job_brief.sql"), &[(&id, Type::INT8)])
                .await?;
            let Some(r) = rows.first() else { break };
            earlier.push(ChainJob {
                id,
                status: r.get("status"),
            });
            next = r.get("redrive_of");
        }
        earlier.reverse();
        let mut later = Vec::new();
        let mut from = job.id;
        while later.len() < limit {
            let rows = self
                .query(
                    include_str!("../sql/redriven_as.sql"),
                    &[(&from, Type::INT8)],
                )
                .await?;
            let Some(r) = rows.first() else { break };
            let id: i64 = r.get("id");
            later.push(ChainJob {
                id,
                status: r.get("status"),
            });
            from = id;
        }
        Ok((earlier, later))
    }

    pub async fn link(&self) -> DbResult<Option<Link>> {
        let rows = self.query(include_str!("../sql/link.sql"), &[]).await?;
        Ok(rows.first().map(|r| Link {
            table: r.get("tbl"),
            key_column: r.get("key_column"),
            status_column: r.get("status_column"),
            readable: r.get("readable"),
            statement: r.get("statement"),
        }))
    }

    /// The business row's status: None when there is no such row, Some(None) when its
    /// status is NULL.
    pub async fn business_status(
        &self,
        link: &Link,
        transaction_id: &str,
    ) -> DbResult<Option<Option<String>>> {
        // The statement is built by link.sql from the catalog (quoted identifiers); the
        // transaction id is its parameter.
        let rows = self
            .query_text(&link.statement, &[(&transaction_id, Type::TEXT)])
            .await?;
        Ok(rows.first().map(|r| r.get(0)))
    }

    pub async fn job_of_key(&self, key: &str) -> DbResult<Option<i64>> {
        let rows = self
            .query(include_str!("../sql/key_job.sql"), &[(&key, Type::TEXT)])
            .await?;
        Ok(rows.first().map(|r| r.get("job_id")))
    }

    pub async fn id_range(&self) -> DbResult<Option<(i64, i64)>> {
        let rows = self.query(include_str!("../sql/id_range.sql"), &[]).await?;
        let r = &rows[0];
        Ok(r.get::<_, Option<i64>>("low")
            .zip(r.get::<_, Option<i64>>("high")))
    }

    /// The first id whose job was created at or after `time`, found by halving the ids
    /// in [low, high + 1]: about 24 primary-key probes for 10,000,000 ids. Exact when
    /// creation times grow with the ids; a job whose transaction began long before its
    /// insert may land on the other side of the bound.
    pub async fn first_id_created_at_or_after(
        &self,
        time: &str,
        low: i64,
        high: i64,
    ) -> DbResult<i64> {
        let (mut lo, mut hi) = (low, high + 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let rows = self
                .query(
                    include_str!("../sql/created_at_from.sql"),
                    &[(&mid, Type::INT8), (&time, Type::TEXT)],
                )
                .await?;
            match rows.first().map(|r| r.get::<_, bool>("at_or_after")) {
                Some(false) => lo = mid + 1,
                _ => hi = mid,
            }
        }
        Ok(lo)
    }

    /// A page of the search: jobs with ids in [low, before), newest first.
    pub async fn search(
        &self,
        before: i64,
        low: i64,
        filters: &Filters,
        limit: i64,
    ) -> DbResult<Vec<JobRow>> {
        let rows = self
            .query(
                include_str!("../sql/search.sql"),
                &[
                    (&before, Type::INT8),
                    (&low, Type::INT8),
                    (&filters.queue, Type::TEXT),
                    (&filters.status, Type::TEXT),
                    (&filters.transaction_id, Type::TEXT),
                    (&filters.created_from, Type::TEXT),
                    (&filters.created_to, Type::TEXT),
                    (&limit, Type::INT8),
                ],
            )
            .await?;
        Ok(rows.iter().map(job_row).collect())
    }

    pub async fn failed(
        &self,
        queue: &str,
        after: Option<(&str, i64)>,
        limit: i64,
    ) -> DbResult<Vec<FailedJob>> {
        let (at, id) = (after.map(|a| a.0), after.map(|a| a.1));
        let rows = self
            .query(
                include_str!("../sql/failed.sql"),
                &[
                    (&queue, Type::TEXT),
                    (&at, Type::TEXT),
                    (&id, Type::INT8),
                    (&limit, Type::INT8),
                ],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| FailedJob {
                id: r.get("id"),
                attempts: r.get("attempts"),
                claim_generation: r.get("claim_generation"),
                transaction_id: r.get("transaction_id"),
                finished_at: r.get("finished_at"),
                cursor_at: r.get("cursor_at"),
                last_error: r.get("last_error"),
                redriven_as: r.get("redriven_as"),
            })
            .collect())
    }

    pub async fn redrive(&self, ids: &[i64]) -> DbResult<Vec<Redriven>> {
        let rows = self
            .query(
                include_str!("../sql/redrive.sql"),
                &[(&ids, Type::INT8_ARRAY)],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| Redriven {
                id: r.get("id"),
                new_id: r.get("new_id"),
                queue: r.get("queue"),
            })
            .collect())
    }

    pub async fn cancel(&self, id: i64) -> DbResult<String> {
        let rows = self
            .query(include_str!("../sql/cancel.sql"), &[(&id, Type::INT8)])
            .await?;
        Ok(rows[0].get("result"))
    }

    pub async fn pause(&self, queue: &str) -> DbResult<()> {
        self.query(include_str!("../sql/pause.sql"), &[(&queue, Type::TEXT)])
            .await?;
        Ok(())
    }

    /// A queue's stopped ordering keys, the most recently stopped first.
    pub async fn blocked_keys(&self, queue: &str, limit: i64) -> DbResult<Vec<BlockedKey>> {
        let rows = self
            .query(
                include_str!("../sql/blocked_keys.sql"),
                &[(&queue, Type::TEXT), (&limit, Type::INT8)],
            )
            .await?;
        Ok(rows.iter().map(blocked_key).collect())
    }

    /// Whether an ordering key is stopped, and by which job.
    pub async fn blocked_key(&self, key: &str) -> DbResult<Option<BlockedKey>> {
        let rows = self
            .query(
                include_str!("../sql/blocked_key.sql"),
                &[(&key, Type::TEXT)],
            )
            .await?;
        Ok(rows.first().map(blocked_key))
    }

    /// sendjobs_unblock_key, while `job` stops the key: whether the key was stopped
    /// (None: not by that job).
    pub async fn unblock(&self, key: &str, job: i64) -> DbResult<Option<bool>> {
        let rows = self
            .query(
                include_str!("../sql/unblock.sql"),
                &[(&key, Type::TEXT), (&job, Type::INT8)],
            )
            .await?;
        Ok(rows[0].get("was_stopped"))
    }

    /// sendjobs_limit: the queue's cap, rate and burst, replacing the earlier ones.
    pub async fn limit(
        &self,
        queue: &str,
        cap: Option<i32>,
        rate: Option<f64>,
        burst: Option<i32>,
    ) -> DbResult<()> {
        self.query(
            include_str!("../sql/limit.sql"),
            &[
                (&queue, Type::TEXT),
                (&cap, Type::INT4),
                (&rate, Type::FLOAT8),
                (&burst, Type::INT4),
            ],
        )
        .await?;
        Ok(())
    }

    pub async fn resume(&self, queue: &str) -> DbResult<()> {
        self.query(include_str!("../sql/resume.sql"), &[(&queue, Type::TEXT)])
            .await?;
        Ok(())
    }
}

fn blocked_key(r: &Row) -> BlockedKey {
    BlockedKey {
        ordering_key: r.get("ordering_key"),
        job_id: r.get("job_id"),
        blocked_at: r.get("blocked_at"),
    }
}

fn job_row(r: &Row) -> JobRow {
    JobRow {
        id: r.get("id"),
        queue: r.get("queue"),
        status: r.get("status"),
        attempts: r.get("attempts"),
        max_attempts: r.get("max_attempts"),
        claim_generation: r.get("claim_generation"),
        transaction_id: r.get("transaction_id"),
        created_at: r.get("created_at"),
        finished_at: r.get("finished_at"),
        last_error: r.get("last_error"),
    }
}
