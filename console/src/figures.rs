//! The figures every queue page shows — `sendjobs_stats()` and the hour's chart — read
//! once for every request and operator: every `FRESH` (or ten times as long as the last
//! read took, if longer), by one read at a time, in the background while someone looks.
//! A page serves the last read and says how old it is; it waits for a read only when none
//! is younger than `STALE` (the first look after a quiet minute). At 1,000 queues with 1,000 jobs waiting in each,
//! `sendjobs_stats()` takes 1.4 s: read per request (each page and each browser's live
//! refresh) it made every queue page that slow and the database busy for each operator
//! (decision 0021).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::db::{ChartPoint, Db, QueueStats};
use crate::error::DbError;
use crate::Shared;

/// How often the figures are read while someone looks: the live refresh's period.
const FRESH: Duration = Duration::from_secs(5);
/// The oldest figures a page serves without waiting for a read (or twenty times as long
/// as the last read took, if longer).
const STALE: Duration = Duration::from_secs(30);
/// How long the background keeps reading after the last look.
const WATCHED: Duration = Duration::from_secs(60);

/// One read of the figures.
pub struct Snapshot {
    pub stats: Vec<QueueStats>,
    pub chart: Vec<ChartPoint>,
    pub read_at: Instant,
    /// How long the read took (the page says it).
    pub took: Duration,
}

#[derive(Default)]
pub struct Figures {
    state: Mutex<State>,
    /// One read at a time: a request that must wait takes it, or waits for the one running.
    reading: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct State {
    last: Option<Arc<Snapshot>>,
    looked_at: Option<Instant>,
    background: bool,
}

impl Figures {
    /// The figures for a page: the last read if it is younger than `STALE` (and a read in
    /// the background kept going while pages are asked for), else a new one.
    pub async fn get(app: &Shared) -> Result<Arc<Snapshot>, DbError> {
        let this = &app.figures;
        let start_background = {
            let mut state = this.state.lock().expect("figures' lock");
            state.looked_at = Some(Instant::now());
            !std::mem::replace(&mut state.background, true)
        };
        if start_background {
            tokio::spawn(Self::keep_reading(Arc::clone(app)));
        }
        // A slow read is made less often (keep_reading): its figures serve longer.
        let stale = this.last().map_or(STALE, |last| STALE.max(last.took * 20));
        if let Some(last) = this.fresh_enough(stale) {
            return Ok(last);
        }
        let _reading = this.reading.lock().await;
        // Another request may have read them while this one waited.
        if let Some(last) = this.fresh_enough(stale) {
            return Ok(last);
        }
        this.read(&app.db).await
    }

    fn last(&self) -> Option<Arc<Snapshot>> {
        self.state.lock().expect("figures' lock").last.clone()
    }

    fn fresh_enough(&self, within: Duration) -> Option<Arc<Snapshot>> {
        self.last().filter(|s| s.read_at.elapsed() < within)
    }

    async fn read(&self, db: &Db) -> Result<Arc<Snapshot>, DbError> {
        let started = Instant::now();
        let (stats, chart) = tokio::try_join!(db.stats(), db.hour_chart())?;
        let snapshot = Arc::new(Snapshot {
            stats,
            chart,
            read_at: Instant::now(),
            took: started.elapsed(),
        });
        self.state.lock().expect("figures' lock").last = Some(Arc::clone(&snapshot));
        Ok(snapshot)
    }

    /// Reads the figures every `FRESH` until no page has asked for them for `WATCHED`.
    async fn keep_reading(app: Shared) {
        let this = &app.figures;
        loop {
            tokio::time::sleep(FRESH).await;
            {
                let mut state = this.state.lock().expect("figures' lock");
                if state.looked_at.is_none_or(|t| t.elapsed() > WATCHED) {
                    state.background = false;
                    return;
                }
            }
            // A slow read is made less often: the console spends at most a tenth of a
            // database core on its figures (a read of 1.4 s: every 14 s).
            let period = this.last().map_or(FRESH, |last| FRESH.max(last.took * 10));
            if this.fresh_enough(period).is_some() {
                continue;
            }
            let _reading = this.reading.lock().await;
            // A page may have read them while this waited for the lock.
            if this.fresh_enough(period).is_some() {
                continue;
            }
            if let Err(err) = this.read(&app.db).await {
                tracing::warn!("sendjobs-console: reading the queues' figures: {err}");
            }
        }
    }
}
