//! A form's `default_region`: an ISO 3166 region code libphonenumber knows (`TW`, `US`, `JP`).

use std::str::FromStr;

/// Checked when the configuration is loaded.
pub fn check_region(region: &str) -> Result<(), validator::ValidationError> {
    match phonenumber::country::Id::from_str(region) {
        Ok(_) => Ok(()),
        Err(_) => {
            let mut e = validator::ValidationError::new("region");
            e.message = Some(format!("`{region}` is not a region code (e.g. TW, US, JP)").into());
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_regions_pass_and_others_are_named() {
        assert!(super::check_region("TW").is_ok() && super::check_region("US").is_ok());
        let e = super::check_region("Taiwan").unwrap_err();
        assert!(e.message.unwrap().contains("`Taiwan` is not a region code"));
        let mut config = crate::config::Config::builtin().unwrap();
        config.forms.get_mut("contact").unwrap().default_region = Some("Taiwan".into());
        let problems = crate::config::problems(&config).join("; ");
        assert!(problems.contains("forms.contact") && problems.contains("default_region"), "{problems}");
    }
}
