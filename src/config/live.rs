//! The forms in force, swapped whole when the configuration is reloaded (`SIGHUP`,
//! `onceform reload`): a request takes the set in force when it starts and finishes under
//! it, so no request sees half of a reload. A reload that fails changes nothing; its error
//! is kept (and counted) until a good one loads.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use super::{Config, Form, Secrets};
use crate::base::metrics::IntCounter;

/// One configuration's forms, each shared with the threads that accept its submissions.
#[derive(Debug)]
pub struct Forms {
    /// The configuration they were read from.
    pub config: Arc<Config>,
    by_name: BTreeMap<String, Form>,
}

impl Forms {
    pub fn new(config: Arc<Config>) -> Forms {
        let by_name =
            config.forms.iter().map(|(name, form)| (name.clone(), Form::new(name, form.clone()))).collect();
        Forms { config, by_name }
    }

    pub fn get(&self, name: &str) -> Option<&Form> {
        self.by_name.get(name)
    }

    /// A "duplicate of" decision on a submission of form `name` adds a note in the CRM
    /// (`[forms.F.crm] on_duplicate = "note"`).
    pub fn notes_duplicates(&self, name: &str) -> bool {
        self.get(name).is_some_and(|f| f.crm.on_duplicate == super::OnDuplicate::Note)
    }

    /// In name order.
    pub fn iter(&self) -> impl Iterator<Item = &Form> {
        self.by_name.values()
    }
}

/// The forms in force, the environment they were read with, and how the last reload went.
#[derive(Debug)]
pub struct LiveForms {
    current: RwLock<Arc<Forms>>,
    /// The snapshot of the environment the start (or the last good reload) took: the
    /// secrets an admin-defined form's effects name are checked against it.
    secrets: RwLock<Arc<Secrets>>,
    /// `onceform_config_reload_failures_total` on `/metrics`.
    failures: IntCounter,
    last_error: Mutex<Option<String>>,
    /// Held while a new set is made from the one in force and put (a reload, a merge of the
    /// admin-defined forms), so that one never undoes another.
    updating: Mutex<()>,
}

impl LiveForms {
    pub fn new(config: Arc<Config>, secrets: Arc<Secrets>) -> crate::base::metrics::Result<LiveForms> {
        let failures = IntCounter::new(
            "onceform_config_reload_failures_total",
            "Configuration reloads refused since the start (the forms in force stayed).",
        )?;
        Ok(LiveForms {
            current: RwLock::new(Arc::new(Forms::new(config))),
            secrets: RwLock::new(secrets),
            failures,
            last_error: Mutex::default(),
            updating: Mutex::default(),
        })
    }

    /// One update at a time: held from reading the set in force to putting the next.
    pub fn updating(&self) -> MutexGuard<'_, ()> {
        self.updating.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The set in force now (a request keeps it to its end).
    pub fn now(&self) -> Arc<Forms> {
        match self.current.read() {
            Ok(forms) => forms.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The environment's snapshot in force.
    pub fn secrets(&self) -> Arc<Secrets> {
        match self.secrets.read() {
            Ok(secrets) => secrets.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Puts a reload's fresh snapshot of the environment in force.
    pub fn put_secrets(&self, secrets: Arc<Secrets>) {
        match self.secrets.write() {
            Ok(mut current) => *current = secrets,
            Err(poisoned) => *poisoned.into_inner() = secrets,
        }
    }

    /// Puts `config`'s forms in force (a checked configuration), and forgets a failed reload.
    pub fn put(&self, config: Config) {
        self.put_merged(config);
        self.set_error(None);
    }

    /// Puts `config`'s forms in force without reading the file again (the admin-defined forms
    /// changed): an error of a failed reload stays shown, since the file is still the same.
    pub fn put_merged(&self, config: Config) {
        let forms = Arc::new(Forms::new(Arc::new(config)));
        match self.current.write() {
            Ok(mut current) => *current = forms,
            Err(poisoned) => *poisoned.into_inner() = forms,
        }
    }

    /// A reload that failed: nothing changes, and `error` is shown until a good one loads.
    pub fn failed(&self, error: String) {
        self.failures.inc();
        self.set_error(Some(error));
    }

    /// Reloads that failed since the start.
    pub fn failures(&self) -> u64 {
        self.failures.get()
    }

    /// The counter of failed reloads, for the registry of `/metrics`.
    pub fn failures_counter(&self) -> IntCounter {
        self.failures.clone()
    }

    /// Why the last reload failed, while no good one has loaded since.
    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().map_or(None, |e| e.clone())
    }

    fn set_error(&self, error: Option<String>) {
        if let Ok(mut last) = self.last_error.lock() {
            *last = error;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_set_outlives_a_reload_and_a_failure_changes_nothing() {
        let live = LiveForms::new(Arc::new(Config::builtin().unwrap()), Arc::default()).unwrap();
        let before = live.now();
        assert!(before.get("contact").is_some());
        live.failed("line 3: unknown key".into());
        assert_eq!((live.failures(), live.last_error().as_deref()), (1, Some("line 3: unknown key")));
        assert!(Arc::ptr_eq(&before, &live.now()), "a failed reload changes nothing");
        let mut next = Config::builtin().unwrap();
        let contact = next.forms.remove("contact").unwrap();
        next.forms.insert("quote".into(), contact);
        live.put(next);
        assert!(live.now().get("quote").is_some() && live.now().get("contact").is_none());
        assert!(before.get("contact").is_some(), "a request's set is its own to its end");
        assert_eq!((live.failures(), live.last_error()), (1, None), "a good reload clears the error");
    }
}
