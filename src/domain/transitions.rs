//! The state machine of side-effect records: every legal change of `side_effects.state`,
//! in one table. Every update in `db/` that changes a record's state takes a `Move` (and
//! writes the change feed's row of each record it moved, `db::changes`), and a
//! `Move` exists only for legal changes: the fixed ones are constants checked when the
//! crate compiles, the others (a worker's decision, an admin's action) are checked by
//! `Move::new` before anything is written.
//!
//! ```text
//! PENDING ──claim──▶ SENDING ──▶ SENT
//!    │  ▲               │ └────▶ FAILED_FINAL ──retry/mark sent/cancel──▶ PENDING | SENT | CANCELLED
//!    │  └──retry────────┤
//!    │                  └─lease ran out / ambiguous──▶ UNKNOWN ──lookup/admin──▶ SENT | PENDING | FAILED_FINAL | CANCELLED
//!    └──purge/cap/admin/duplicate──▶ CANCELLED ──duplicate decision undone──▶ PENDING
//! ```

use super::EffectState::{self, Cancelled, FailedFinal, Pending, Sending, Sent, Unknown};

/// Every legal (from, to). SENT is final; so is CANCELLED but for a duplicate decision
/// that is undone (its effects were cancelled for it).
pub const LEGAL: &[(EffectState, EffectState)] = &[
    // A worker claims a due record; an admin marks one sent or cancels it; retention,
    // the recipient cap or a duplicate decision cancels it; an admin's retry re-schedules it.
    (Pending, Sending),
    (Pending, Sent),
    (Pending, Cancelled),
    (Pending, Pending),
    // What an attempt came to; a record this process cannot deliver goes back to PENDING.
    (Sending, Sent),
    (Sending, Pending),
    (Sending, Unknown),
    (Sending, FailedFinal),
    // A late attempt's result, a lookup's, or an admin's decision.
    (Unknown, Sent),
    (Unknown, Pending),
    (Unknown, Unknown),
    (Unknown, FailedFinal),
    (Unknown, Cancelled),
    // An admin retries, marks sent or cancels.
    (FailedFinal, Pending),
    (FailedFinal, Sent),
    (FailedFinal, Cancelled),
    // A duplicate decision undone restores what it cancelled.
    (Cancelled, Pending),
];

/// Whether a record may go from `from` to `to`.
pub const fn is_legal(from: EffectState, to: EffectState) -> bool {
    let mut i = 0;
    while i < LEGAL.len() {
        if LEGAL[i].0 as u8 == from as u8 && LEGAL[i].1 as u8 == to as u8 {
            return true;
        }
        i += 1;
    }
    false
}

/// A legal change: a record in any of `from` goes to `to`. The update that applies it
/// filters on `from`, so a record in another state is left alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    /// The from-states, one bit each (`bit`).
    from: u8,
    to: EffectState,
}

const fn bit(s: EffectState) -> u8 {
    1 << (s as u8)
}

/// A change the state machine does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("illegal side-effect transition {from} -> {to}")]
pub struct IllegalMove {
    pub from: EffectState,
    pub to: EffectState,
}

impl Move {
    /// A worker claims a due record.
    pub const CLAIM: Move = Move::fixed(&[Pending], Sending);
    /// A lease ran out while sending: the outcome is unknown, never assumed.
    pub const LEASE_EXPIRED: Move = Move::fixed(&[Sending], Unknown);
    /// A record still waiting is cancelled (retention, erasure, the recipient cap, an admin,
    /// a duplicate decision).
    pub const CANCEL_PENDING: Move = Move::fixed(&[Pending], Cancelled);
    /// What a duplicate decision cancelled goes back to waiting when it is undone.
    pub const RESTORE_CANCELLED: Move = Move::fixed(&[Cancelled], Pending);
    /// Where an attempt's result may be recorded from: the lease's SENDING, or UNKNOWN when
    /// the lease ran out meanwhile.
    pub const AFTER_ATTEMPT: &'static [EffectState; 2] = &[Sending, Unknown];
    /// Where a lookup's result may be recorded from.
    pub const AFTER_LOOKUP: &'static [EffectState; 1] = &[Unknown];

    /// A change known when the crate compiles: an illegal one does not compile.
    const fn fixed(from: &[EffectState], to: EffectState) -> Move {
        let (mut i, mut mask) = (0, 0);
        while i < from.len() {
            assert!(is_legal(from[i], to), "illegal side-effect transition");
            mask |= bit(from[i]);
            i += 1;
        }
        Move { from: mask, to }
    }

    /// The change from any of `from` to `to`, if every one of them is legal.
    pub fn new(from: &[EffectState], to: EffectState) -> Result<Move, IllegalMove> {
        match from.iter().find(|f| !is_legal(**f, to)) {
            Some(f) => Err(IllegalMove { from: *f, to }),
            None => Ok(Move { from: from.iter().fold(0, |m, f| m | bit(*f)), to }),
        }
    }

    /// The states it applies from (what the update filters on).
    pub fn from(&self) -> Vec<EffectState> {
        EffectState::ALL.into_iter().filter(|s| self.from & bit(*s) != 0).collect()
    }

    pub fn to(&self) -> EffectState {
        self.to
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole table, state by state: what each state may become.
    #[test]
    fn the_table_of_legal_transitions() {
        let next = |from: EffectState| -> Vec<EffectState> {
            EffectState::ALL.into_iter().filter(|to| is_legal(from, *to)).collect()
        };
        assert_eq!(next(Pending), [Pending, Sending, Sent, Cancelled]);
        assert_eq!(next(Sending), [Pending, Sent, Unknown, FailedFinal]);
        assert_eq!(next(Unknown), [Pending, Sent, Unknown, FailedFinal, Cancelled]);
        assert_eq!(next(FailedFinal), [Pending, Sent, Cancelled]);
        assert_eq!(next(Cancelled), [Pending]);
        assert_eq!(next(Sent), [], "SENT is final");
        for to in EffectState::ALL {
            assert!(!is_legal(to, Sending) || to == Pending, "only a claim starts sending");
        }
    }

    #[test]
    fn a_move_exists_only_for_legal_changes() {
        assert_eq!(Move::new(&[Unknown], Sent).map(|m| m.to()), Ok(Sent));
        assert_eq!(Move::new(Move::AFTER_ATTEMPT, FailedFinal).map(|m| m.from()), Ok(vec![Sending, Unknown]));
        assert_eq!(Move::new(&[Sent], Pending), Err(IllegalMove { from: Sent, to: Pending }));
        assert_eq!(
            Move::new(&[Unknown, Cancelled], Sent),
            Err(IllegalMove { from: Cancelled, to: Sent }),
            "every from-state must be legal"
        );
        assert!(Move::new(Move::AFTER_LOOKUP, Sending).is_err(), "a lookup never claims");
        assert_eq!((Move::CLAIM.from(), Move::CLAIM.to()), (vec![Pending], Sending));
    }
}
