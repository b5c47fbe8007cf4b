//! What a move of one job came to: [`Moved`], the typed answer of `Queue::retry`, `promote`,
//! `remove` and `change_priority` (instead of a bare `bool`), so a caller can say why a move was
//! refused without reading the job again itself.

use crate::error::{Error, ErrorCode};
use crate::job::JobState;
use crate::job_id::JobId;

/// The outcome of a move of one job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moved {
    /// The job moved.
    Moved,
    /// There is no such job in the queue.
    NotFound,
    /// The job is in a state the move does not take; the state is the one read right after the
    /// script refused (in the same slot, by the next call).
    WrongState(JobState),
}

impl Moved {
    /// True for [`Moved::Moved`].
    pub fn is_moved(self) -> bool {
        self == Moved::Moved
    }

    /// `Ok(())` when the job moved; otherwise the error a caller that insists reports:
    /// `job_not_found`, or `invalid_state` naming the state it is in and the one the move needs.
    pub fn require(self, queue: &str, id: JobId, verb: &str, needs: &str) -> crate::Result<()> {
        match self {
            Moved::Moved => Ok(()),
            Moved::NotFound => Err(Error::new(
                ErrorCode::JobNotFound,
                format!("no job {id} in queue {queue}"),
            )),
            Moved::WrongState(state) => Err(Error::new(
                ErrorCode::InvalidState,
                format!(
                    "job {id} in queue {queue} is {}; it must be {needs} to be {verb}",
                    state.as_str()
                ),
            )),
        }
    }

    /// A stable word for bindings: `moved`, `not_found`, or the state's name (`active`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Moved::Moved => "moved",
            Moved::NotFound => "not_found",
            Moved::WrongState(s) => s.as_str(),
        }
    }
}
