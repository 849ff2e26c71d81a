//! `none`: deliveries are not signed (only behind a network boundary you trust).

use super::check_table;
use super::{Delivery, Keys, Verifier, VerifyError};
use crate::config::hooks::{HookConfig, VerifierRules};

pub struct Unsigned;

impl VerifierRules for Unsigned {
    fn name(&self) -> &'static str {
        "none"
    }

    /// It reads no key of its own.
    fn check_settings(&self, own: &toml::Value) -> Result<(), String> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Nothing {}
        check_table::<Nothing>(own)
    }

    fn signs(&self) -> bool {
        false
    }
}

impl Verifier for Unsigned {
    fn load(
        &self,
        _hook: &HookConfig,
        _env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Box<dyn Keys>, String> {
        Ok(Box::new(Unsigned))
    }
}

impl Keys for Unsigned {
    fn open(&self, d: &Delivery<'_>) -> Result<Vec<u8>, VerifyError> {
        Ok(d.raw.to_vec())
    }
}
