//! The metric families `/metrics` serves, each declared once (name, help, type, label names)
//! and encoded by the `prometheus` crate in the text format 0.0.4. Live figures are the
//! crate's counters and gauges; figures read at scrape time (the database's, the spool's)
//! are a custom collector's: a [`Family`] declares them and [`Samples`] fill one scrape.

use std::sync::atomic::{AtomicU64, Ordering};

pub use prometheus::core::{Collector, Desc};
pub use prometheus::proto::{MetricFamily, MetricType};
pub use prometheus::{IntCounter, IntCounterVec, IntGauge, Opts, Registry, Result};

use prometheus::core::{Atomic, AtomicF64};
use prometheus::proto::{Bucket, Counter, Gauge, Histogram, LabelPair, Metric, Summary};

/// One family whose samples are built at scrape time.
#[derive(Debug)]
pub struct Family {
    desc: Desc,
    kind: MetricType,
}

impl Family {
    /// `name`, of type `kind`, labelled by `labels` in this order (a histogram's `le` is the
    /// encoder's); an invalid name or an empty help is an error.
    pub fn new(name: &str, help: impl Into<String>, kind: MetricType, labels: &[&str]) -> Result<Family> {
        let labels = labels.iter().map(|l| l.to_string()).collect();
        Ok(Family { desc: Desc::new(name.into(), help.into(), labels, Default::default())?, kind })
    }

    pub fn counter(name: &str, help: impl Into<String>, labels: &[&str]) -> Result<Family> {
        Family::new(name, help, MetricType::COUNTER, labels)
    }

    pub fn gauge(name: &str, help: impl Into<String>, labels: &[&str]) -> Result<Family> {
        Family::new(name, help, MetricType::GAUGE, labels)
    }

    pub fn desc(&self) -> &Desc {
        &self.desc
    }

    /// The samples of one scrape, none yet.
    pub fn samples(&self) -> Samples<'_> {
        Samples { family: self, metrics: Vec::new() }
    }

    /// The family with one unlabelled sample.
    pub fn single(&self, value: f64) -> MetricFamily {
        let mut samples = self.samples();
        samples.value(&[], value);
        samples.finish()
    }
}

/// The samples of one [`Family`] for one scrape; label values in the family's label order.
pub struct Samples<'a> {
    family: &'a Family,
    metrics: Vec<Metric>,
}

impl Samples<'_> {
    fn metric(&mut self, values: &[&str]) -> &mut Metric {
        let names = &self.family.desc.variable_labels;
        debug_assert_eq!(names.len(), values.len(), "{}", self.family.desc.fq_name);
        let pairs = names
            .iter()
            .zip(values)
            .map(|(name, value)| {
                let mut pair = LabelPair::default();
                pair.set_name(name.clone());
                pair.set_value(value.to_string());
                pair
            })
            .collect();
        self.metrics.push(Metric::from_label(pairs));
        let last = self.metrics.len() - 1;
        &mut self.metrics[last]
    }

    /// A counter's or a gauge's sample.
    pub fn value(&mut self, labels: &[&str], value: f64) {
        let kind = self.family.kind;
        let metric = self.metric(labels);
        if kind == MetricType::COUNTER {
            let mut counter = Counter::default();
            counter.set_value(value);
            metric.set_counter(counter);
        } else {
            let mut gauge = Gauge::default();
            gauge.set_value(value);
            metric.set_gauge(gauge);
        }
    }

    /// A summary's `_sum` and `_count` (no quantiles).
    pub fn summary(&mut self, labels: &[&str], sum: f64, count: u64) {
        let mut summary = Summary::default();
        summary.set_sample_sum(sum);
        summary.set_sample_count(count);
        self.metric(labels).set_summary(summary);
    }

    /// A histogram from its (upper bound, cumulative count) buckets; `+Inf` is the count.
    pub fn histogram(&mut self, labels: &[&str], buckets: &[(f64, u64)], sum: f64, count: u64) {
        let mut histogram = Histogram::default();
        histogram.set_bucket(
            buckets
                .iter()
                .map(|(le, n)| {
                    let mut bucket = Bucket::default();
                    bucket.set_upper_bound(*le);
                    bucket.set_cumulative_count(*n);
                    bucket
                })
                .collect(),
        );
        histogram.set_sample_sum(sum);
        histogram.set_sample_count(count);
        self.metric(labels).set_histogram(histogram);
    }

    pub fn finish(self) -> MetricFamily {
        let mut family = MetricFamily::default();
        family.set_name(self.family.desc.fq_name.clone());
        family.set_help(self.family.desc.help.clone());
        family.set_field_type(self.family.kind);
        family.set_metric(self.metrics);
        family
    }
}

/// A live summary without quantiles (the crate has none): a sum of observations and their
/// count, for a collector to encode with [`Samples::summary`].
#[derive(Debug)]
pub struct SumCount {
    sum: AtomicF64,
    count: AtomicU64,
}

impl Default for SumCount {
    fn default() -> Self {
        SumCount { sum: AtomicF64::new(0.0), count: AtomicU64::new(0) }
    }
}

impl SumCount {
    pub fn observe(&self, value: f64) {
        self.sum.inc_by(value);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// (sum, count) now.
    pub fn get(&self) -> (f64, u64) {
        (self.sum.get(), self.count.load(Ordering::Relaxed))
    }
}

/// The registry's families in the text format 0.0.4.
pub fn encode(registry: &Registry) -> Result<String> {
    prometheus::TextEncoder::new().encode_to_string(&registry.gather())
}

#[cfg(test)]
/// `families` in the text format 0.0.4, those without samples left out (as the registry
/// leaves them out): what a collector's part of `/metrics` reads.
pub fn encode_families(families: &[MetricFamily]) -> Result<String> {
    let some: Vec<MetricFamily> = families.iter().filter(|f| !f.get_metric().is_empty()).cloned().collect();
    prometheus::TextEncoder::new().encode_to_string(&some)
}

/// The content type of [`encode`]'s text.
pub const TEXT_FORMAT: &str = prometheus::TEXT_FORMAT;

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(Vec<Family>);

    impl Collector for Fixed {
        fn desc(&self) -> Vec<&Desc> {
            self.0.iter().map(Family::desc).collect()
        }

        fn collect(&self) -> Vec<MetricFamily> {
            let mut hist = self.0[1].samples();
            hist.histogram(&["contact"], &[(1.0, 1), (60.0, 2)], 61.5, 3);
            let mut sum = self.0[2].samples();
            sum.summary(&["helpdesk"], 0.25, 2);
            vec![self.0[0].single(3.0), hist.finish(), sum.finish()]
        }
    }

    #[test]
    fn families_are_encoded_by_the_crate_in_the_classic_text_format() {
        let registry = Registry::new();
        let families = vec![
            Family::counter("x_total", "Xs.", &[]).unwrap(),
            Family::new("spread_seconds", "Spread.", MetricType::HISTOGRAM, &["form"]).unwrap(),
            Family::new("ingest_seconds", "Ingest.", MetricType::SUMMARY, &["source"]).unwrap(),
        ];
        registry.register(Box::new(Fixed(families))).unwrap();
        let text = encode(&registry).unwrap();
        for line in [
            "# HELP x_total Xs.\n# TYPE x_total counter\nx_total 3\n",
            "# TYPE spread_seconds histogram\nspread_seconds_bucket{form=\"contact\",le=\"1\"} 1\n",
            "spread_seconds_bucket{form=\"contact\",le=\"+Inf\"} 3\nspread_seconds_sum{form=\"contact\"} 61.5\n",
            "# TYPE ingest_seconds summary\ningest_seconds_sum{source=\"helpdesk\"} 0.25\n",
        ] {
            assert!(text.contains(line), "{line} in\n{text}");
        }
        assert!(!text.contains("EOF"));
        assert!(Family::counter("bad name", "x", &[]).is_err());
    }
}
