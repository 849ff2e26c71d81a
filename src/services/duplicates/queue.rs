//! The admin's queue of suspected duplicate pairs: the count in each status, the pairs in
//! one status with both their submissions, and the size of each original's cluster.

use crate::db::admin::review::ReviewStore;
use crate::db::{DbError, Pool};
use crate::domain::{PairStatus, SubmissionId};
use crate::with_conn;

pub use crate::db::admin::review::{PairRow, SubmissionBrief};

/// What the duplicates page shows of one status.
pub struct Queue {
    /// The number of pairs in each status.
    pub counts: Vec<(PairStatus, i64)>,
    /// At most the limit asked for, highest score first.
    pub pairs: Vec<PairRow>,
    /// Both sides of each pair.
    pub submissions: Vec<SubmissionBrief>,
    /// (original, pairs naming it in this status).
    pub cluster_sizes: Vec<(SubmissionId, i64)>,
}

/// The pairs in `status` (at most `limit`), with what the page shows beside them.
pub fn queue(pool: &Pool, status: PairStatus, limit: i64) -> Result<Queue, DbError> {
    with_conn!(pool, |c| {
        let counts = c.pair_counts()?;
        let pairs = c.pairs_in_status(status, limit)?;
        let ids: Vec<SubmissionId> =
            pairs.iter().flat_map(|p| [p.original_id.clone(), p.duplicate_id.clone()]).collect();
        let submissions = c.submissions_by_id(&ids)?;
        let originals: Vec<SubmissionId> = pairs.iter().map(|p| p.original_id.clone()).collect();
        let cluster_sizes = c.cluster_sizes(status, &originals)?;
        Ok(Queue { counts, pairs, submissions, cluster_sizes })
    })
}
