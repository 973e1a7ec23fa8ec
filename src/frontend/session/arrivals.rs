//! Samples and engine events in the order they happened. The sampler and the engine stamp
//! what they send on one clock; a loop that wakes for either takes everything already queued
//! on both channels and hands it on sorted by that time (a sample first at equal times, as a
//! recording replays), so the live model is fed as the replayed one is. At the end, a loop
//! waits here for the sample that shows the engine's final counters.

use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;

use crate::copy::{ProgressSnapshot, Stamped};
use crate::sample::Sample;

/// How long the end of a run waits for the sample that shows the engine's final counters.
pub const FINAL_SAMPLE_WAIT: Duration = Duration::from_millis(600);

/// The two channels a run's loop reads: the sampler's samples and the engine's events.
pub struct Arrivals {
    pub samples: UnboundedReceiver<Sample>,
    pub events: UnboundedReceiver<Stamped>,
}

impl Arrivals {
    /// `first` and everything queued, in time order ([`in_time_order`]).
    pub fn queued(&mut self, first: Option<Arrival>) -> Vec<Arrival> {
        in_time_order(first, &mut self.samples, &mut self.events)
    }

    /// Once the engine has returned with its counters at `last`: hands `feed` what arrives
    /// until a sample shows them (at most [`FINAL_SAMPLE_WAIT`]; the sampler was asked for
    /// that sample when the engine ended), so the model, the summary and the recording end on
    /// the last byte. `feed` returns the counters of the newest sample it has seen.
    pub async fn until_final_sample(
        &mut self,
        last: &ProgressSnapshot,
        mut feed: impl FnMut(Vec<Arrival>) -> Counters,
    ) {
        let deadline = tokio::time::Instant::now() + FINAL_SAMPLE_WAIT;
        let mut first = None;
        loop {
            let seen = feed(self.queued(first.take()));
            if seen.bytes >= last.bytes_copied && seen.files >= last.files_done {
                break;
            }
            match tokio::time::timeout_at(deadline, self.samples.recv()).await {
                Ok(Some(s)) => first = Some(Arrival::Sample(Box::new(s))),
                _ => break,
            }
        }
        feed(self.queued(None));
    }
}

/// The engine's counters a sample showed: bytes copied and files done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    pub bytes: u64,
    pub files: u64,
}

/// One thing a loop feeds the model.
#[derive(Debug)]
pub enum Arrival {
    Sample(Box<Sample>),
    Engine(Stamped),
}

impl Arrival {
    /// When it happened, and samples before engine events at one time.
    fn key(&self) -> (u64, u8) {
        match self {
            Arrival::Sample(s) => (s.t_ns, 0),
            Arrival::Engine(e) => (e.t_ns, 1),
        }
    }
}

/// `first` (what woke the loop, if anything) and everything queued on both channels, in time
/// order; the sort is stable, so each channel keeps its own order within a time.
pub fn in_time_order(
    first: Option<Arrival>,
    samples: &mut UnboundedReceiver<Sample>,
    events: &mut UnboundedReceiver<Stamped>,
) -> Vec<Arrival> {
    let mut all: Vec<Arrival> = first.into_iter().collect();
    while let Ok(s) = samples.try_recv() {
        all.push(Arrival::Sample(Box::new(s)));
    }
    while let Ok(e) = events.try_recv() {
        all.push(Arrival::Engine(e));
    }
    all.sort_by_key(Arrival::key);
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::copy::EngineEvent;

    fn sample(t_ns: u64) -> Sample {
        Sample {
            t_ns,
            ..Sample::default()
        }
    }

    #[test]
    fn an_event_sent_before_a_queued_sample_comes_first() {
        let (s_tx, mut samples) = tokio::sync::mpsc::unbounded_channel();
        let (e_tx, mut events) = tokio::sync::mpsc::unbounded_channel();
        s_tx.send(sample(200)).unwrap();
        s_tx.send(sample(300)).unwrap();
        e_tx.send(Stamped {
            t_ns: 250,
            event: EngineEvent::FlushStarted,
        })
        .unwrap();
        e_tx.send(Stamped {
            t_ns: 300,
            event: EngineEvent::FlushDone,
        })
        .unwrap();
        let first = Some(Arrival::Sample(Box::new(sample(100))));
        let order: Vec<(u64, u8)> = in_time_order(first, &mut samples, &mut events)
            .iter()
            .map(Arrival::key)
            .collect();
        assert_eq!(order, [(100, 0), (200, 0), (250, 1), (300, 0), (300, 1)]);
    }
}
