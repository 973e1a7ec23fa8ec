//! A `--pace auto` run against the unpaced run it stood in for: the run's own measured rates
//! (the intake while the writer ran, the pool's or the disks' write rate, a txg's fixed cost)
//! replayed free through the simulation `whatif --pace off` runs, so the summary can say
//! what pacing avoided (the drops, their time) and what it cost (the end).

use super::{Figures, Measured, Observer, Scenario, Settings, WhatifError, predict};
use crate::model::Model;
use crate::sample::{Environment, Sample};

/// What a paced run keeps of its samples for the comparison at its end.
#[derive(Debug, Clone, Default)]
pub struct Hindsight {
    observer: Observer,
}

/// The paced run's figures and the predicted unpaced run's.
#[derive(Debug, Clone, PartialEq)]
pub struct PaceComparison {
    pub paced: Figures,
    pub unpaced: Figures,
}

impl Hindsight {
    /// One for a copy paced by `--pace auto`; none for any other run.
    pub fn for_run(env: &Environment) -> Option<Hindsight> {
        Hindsight::wanted(env).then(Hindsight::default)
    }

    /// The run (its environment) is a copy paced by `--pace auto` (a watch paces nothing).
    pub fn wanted(env: &Environment) -> bool {
        env.pace_auto && env.watched.is_none()
    }

    /// Looks at one sample of the run (every one, in order).
    pub fn sample(&mut self, s: &Sample) {
        self.observer.sample(s);
    }

    /// The run (`model`, finished; sampled every `interval_ns`) against its copy run free.
    pub fn compare(&self, model: &Model, interval_ns: u64) -> Result<PaceComparison, WhatifError> {
        let measured = Measured::new(model, &self.observer, interval_ns)?;
        let scenario = Scenario {
            settings: Settings {
                pace_off: true,
                ..Settings::default()
            },
            model: *model.config(),
            ..Scenario::default()
        };
        let unpaced = predict(&measured, &scenario)?;
        Ok(PaceComparison {
            paced: Figures::of(model),
            unpaced: Figures::of(&unpaced.model),
        })
    }
}

impl PaceComparison {
    /// Drops the pace avoided (negative: it made more).
    pub fn drops_avoided(&self) -> i64 {
        self.unpaced.drops as i64 - self.paced.drops as i64
    }

    /// Seconds the paced run ended after the unpaced one would have (negative: before).
    pub fn end_cost_s(&self) -> f64 {
        self.paced.end_s - self.unpaced.end_s
    }
}
