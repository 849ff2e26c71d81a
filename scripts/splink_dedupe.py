#!/usr/bin/env python3
"""The reference for BENCHMARKS.md's duplicate detection rows: Splink (PyPI, DuckDB backend)
on the corpus `cargo bench --bench dedupe -- --write DIR` writes, scored like onceform's
review queue.

    python3 -m venv /tmp/splink && /tmp/splink/bin/pip install splink
    cargo bench --bench dedupe -- --seeds 1,2,3 --write /tmp/dedupe
    /tmp/splink/bin/python scripts/splink_dedupe.py /tmp/dedupe 1 2 3

Configured as Splink's documentation recommends for deduplicating people: cleaned columns
(lower case, digits of the phone), NameComparison, EmailComparison, exact phone, Jaro-Winkler
company, Jaccard message, blocking on email, phone and name; lambda from deterministic rules,
u by random sampling, m by expectation maximisation on two blocks. Each later row's best
match within 72 h scoring at least the threshold is its review item (as onceform keeps one
pair per submission); an item is true when both rows are one request.
"""
import sys
import unicodedata

import pandas as pd
import splink.comparison_library as cl
from splink import DuckDBAPI, Linker, SettingsCreator, block_on


def clean(df):
    fold = lambda s: unicodedata.normalize("NFKC", str(s)).strip().lower() if isinstance(s, str) else None
    out = pd.DataFrame({"unique_id": range(len(df))})
    out["name"] = df["name"].map(fold)
    out["email"] = df["email"].map(fold)
    digits = df["phone"].fillna("").map(lambda s: "".join(c for c in unicodedata.normalize("NFKC", s) if c.isdigit()))
    out["phone"] = digits.map(lambda d: d[-9:] if d else None)  # the national significant part
    out["company"] = df["company"].map(fold)
    out["message"] = df["message"].map(fold)
    out["received_at"] = pd.to_datetime(df["received_at"])
    return out


def run(directory, seed, threshold):
    rows = pd.read_csv(f"{directory}/corpus-{seed}.csv", dtype=str, keep_default_na=False)
    labels = pd.read_csv(f"{directory}/labels-{seed}.csv")
    df = clean(rows.replace({"": None}))
    settings = SettingsCreator(
        link_type="dedupe_only",
        comparisons=[
            cl.NameComparison("name"),
            cl.EmailComparison("email"),
            cl.ExactMatch("phone"),
            cl.JaroWinklerAtThresholds("company"),
            cl.JaccardAtThresholds("message", [0.9, 0.7, 0.5]),
        ],
        blocking_rules_to_generate_predictions=[block_on("email"), block_on("phone"), block_on("name")],
    )
    # Splink 5: the data frame is registered with the backend first (4: Linker(df, settings, db_api=...)).
    linker = Linker(DuckDBAPI().register(df.drop(columns=["received_at"])), settings)
    linker.training.estimate_probability_two_random_records_match(
        [block_on("email"), block_on("phone", "name")], recall=0.8
    )
    linker.training.estimate_u_using_random_sampling(max_pairs=1e6)
    linker.training.estimate_parameters_using_expectation_maximisation(block_on("email"))
    linker.training.estimate_parameters_using_expectation_maximisation(block_on("phone"))
    pred = linker.inference.predict(threshold_match_probability=threshold).as_pandas_dataframe()
    at = df["received_at"]
    pred["gap_h"] = (at[pred["unique_id_r"]].values - at[pred["unique_id_l"]].values) / pd.Timedelta(hours=1)
    pred = pred[pred["gap_h"].abs() <= 72]
    pred["later"] = pred.apply(lambda p: p.unique_id_r if p.gap_h >= 0 else p.unique_id_l, axis=1)
    pred["earlier"] = pred.apply(lambda p: p.unique_id_l if p.gap_h >= 0 else p.unique_id_r, axis=1)
    best = pred.sort_values("match_probability", ascending=False).drop_duplicates("later")
    req, person, repeat = labels["request"].values, labels["person"].values, labels["repeat"].values
    true = [req[a] == req[b] for a, b in zip(best["earlier"], best["later"])]
    same_person = sum(1 for a, b, t in zip(best["earlier"], best["later"], true) if not t and person[a] == person[b])
    found = {b for b, t in zip(best["later"], true) if t}
    repeats = int(repeat.sum())
    items = len(best)
    p = sum(true) / max(items, 1)
    r = len(found) / max(repeats, 1)
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    print(
        f"| Splink {threshold} | {seed} | {len(df)} | {repeats} | {items} | {r:.3f} | {p:.3f} | {f1:.3f} | "
        f"{same_person} ({100 * same_person / max(items, 1):.1f} %) | {items - sum(true) - same_person} |"
    )


if __name__ == "__main__":
    directory, seeds = sys.argv[1], sys.argv[2:]
    print("| tool | seed | rows | repeats | queue items | recall | precision | F1 | same sender other request | other people |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for seed in seeds:
        for threshold in (0.9, 0.99):
            run(directory, seed, threshold)
