//! Who uses each blob of the file store: the submissions whose fields name it
//! (`submission_files`, written in the accept transaction) and the uploads not yet an hour
//! old (`uploads`). A blob nothing uses is deleted by the lifecycle's sweep.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::admin::effects::EffectAdminStore;
use super::models::{SubmissionFile, Upload};
use super::schema::{duplicate_pairs, submission_files, submissions, uploads};
use super::DbConnection;
use crate::domain::{PairStatus, ScanState, SpamReason};

pub trait FileRefs {
    fn insert_submission_files(&mut self, rows: &[SubmissionFile]) -> QueryResult<()>;
    fn insert_upload(&mut self, row: &Upload) -> QueryResult<()>;
    /// The uploads of `form` among `ids` (an unknown or foreign ID is left out).
    fn uploads_of(&mut self, form: &str, ids: &[&str]) -> QueryResult<Vec<Upload>>;
    fn files_of(&mut self, submission_id: &str) -> QueryResult<Vec<SubmissionFile>>;
    /// (spam, stored fields) of the submission, if it names the blob `sha256`.
    fn naming(&mut self, submission_id: &str, sha256: &str) -> QueryResult<Option<(bool, Option<String>)>>;
    /// Those of `digests` that a submission or an upload still names.
    fn in_use(&mut self, digests: &[String]) -> QueryResult<Vec<String>>;
    /// Deletes the uploads made before `before`; returns their digests.
    fn forget_uploads_before(&mut self, before: NaiveDateTime) -> QueryResult<Vec<String>>;
    /// Deletes the uploads of these blobs (an erasure: the person's files go, used or not).
    fn forget_uploads_of(&mut self, digests: &[String]) -> QueryResult<usize>;
    /// Deletes the file rows of these submissions (their content went); returns their digests.
    fn forget_files_of(&mut self, submission_ids: &[String]) -> QueryResult<Vec<String>>;
    /// Files whose scan waits for clamd, oldest submissions first.
    fn pending_scans(&mut self, limit: i64) -> QueryResult<Vec<SubmissionFile>>;
    fn set_scan(&mut self, submission_id: &str, sha256: &str, scan: ScanState) -> QueryResult<usize>;
    /// A file of the submission is malware: it becomes spam (reason `malware`) and its
    /// effects still waiting are cancelled.
    fn set_aside_as_malware(&mut self, submission_id: &str, now: NaiveDateTime) -> QueryResult<()>;
    /// Releases the submission's held effects once no file waits for a scan (or could not be
    /// scanned) and no duplicate pair naming it waits for screening or review.
    fn release_scanned(&mut self, submission_id: &str, now: NaiveDateTime) -> QueryResult<usize>;
}

impl FileRefs for DbConnection {
    fn set_aside_as_malware(&mut self, submission_id: &str, now: NaiveDateTime) -> QueryResult<()> {
        diesel::update(submissions::table.filter(submissions::id.eq(submission_id)))
            .set((submissions::spam.eq(true), submissions::spam_reason.eq(Some(SpamReason::Malware))))
            .execute(self)?;
        super::queue::cancel_pending(self, &[submission_id.to_string()], now, SpamReason::Malware.as_str())?;
        Ok(())
    }

    fn release_scanned(&mut self, submission_id: &str, now: NaiveDateTime) -> QueryResult<usize> {
        let waiting: i64 = duplicate_pairs::table
            .filter(duplicate_pairs::duplicate_id.eq(submission_id))
            .filter(duplicate_pairs::status.eq_any([PairStatus::Screening, PairStatus::Open]))
            .count()
            .get_result(self)?;
        match waiting {
            0 => self.release_held_of(submission_id, now),
            _ => Ok(0),
        }
    }

    fn insert_submission_files(&mut self, rows: &[SubmissionFile]) -> QueryResult<()> {
        self.insert_rows::<_, SubmissionFile>(submission_files::table, rows)
    }

    fn insert_upload(&mut self, row: &Upload) -> QueryResult<()> {
        diesel::insert_into(uploads::table).values(row).execute(self).map(|_| ())
    }

    fn uploads_of(&mut self, form: &str, ids: &[&str]) -> QueryResult<Vec<Upload>> {
        uploads::table
            .filter(uploads::form.eq(form))
            .filter(uploads::id.eq_any(ids))
            .select(Upload::as_select())
            .load(self)
    }

    fn files_of(&mut self, submission_id: &str) -> QueryResult<Vec<SubmissionFile>> {
        submission_files::table
            .filter(submission_files::submission_id.eq(submission_id))
            .select(SubmissionFile::as_select())
            .load(self)
    }

    fn naming(&mut self, submission_id: &str, sha256: &str) -> QueryResult<Option<(bool, Option<String>)>> {
        submissions::table
            .inner_join(submission_files::table)
            .filter(submissions::id.eq(submission_id))
            .filter(submission_files::sha256.eq(sha256))
            .select((submissions::spam, submissions::fields_json))
            .first(self)
            .optional()
    }

    fn in_use(&mut self, digests: &[String]) -> QueryResult<Vec<String>> {
        let mut used: Vec<String> = submission_files::table
            .filter(submission_files::sha256.eq_any(digests))
            .select(submission_files::sha256)
            .distinct()
            .load(self)?;
        used.extend(
            uploads::table
                .filter(uploads::sha256.eq_any(digests))
                .select(uploads::sha256)
                .distinct()
                .load::<String>(self)?,
        );
        used.sort();
        used.dedup();
        Ok(used)
    }

    fn forget_uploads_before(&mut self, before: NaiveDateTime) -> QueryResult<Vec<String>> {
        let old = || uploads::table.filter(uploads::created_at.lt(before));
        let digests = old().select(uploads::sha256).load(self)?;
        diesel::delete(old()).execute(self)?;
        Ok(digests)
    }

    fn forget_uploads_of(&mut self, digests: &[String]) -> QueryResult<usize> {
        diesel::delete(uploads::table.filter(uploads::sha256.eq_any(digests))).execute(self)
    }

    fn forget_files_of(&mut self, submission_ids: &[String]) -> QueryResult<Vec<String>> {
        let of = || submission_files::table.filter(submission_files::submission_id.eq_any(submission_ids));
        let digests = of().select(submission_files::sha256).load(self)?;
        diesel::delete(of()).execute(self)?;
        Ok(digests)
    }

    fn pending_scans(&mut self, limit: i64) -> QueryResult<Vec<SubmissionFile>> {
        submission_files::table
            .filter(submission_files::scan.eq(ScanState::Pending))
            .order(submission_files::submission_id)
            .limit(limit)
            .select(SubmissionFile::as_select())
            .load(self)
    }

    fn set_scan(&mut self, submission_id: &str, sha256: &str, scan: ScanState) -> QueryResult<usize> {
        diesel::update(
            submission_files::table
                .filter(submission_files::submission_id.eq(submission_id))
                .filter(submission_files::sha256.eq(sha256)),
        )
        .set(submission_files::scan.eq(scan))
        .execute(self)
    }
}
