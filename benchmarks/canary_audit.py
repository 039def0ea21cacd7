"""How tight the one-run canary audit is on the shipped recipes: each barrier's mechanism, run by its own code at
a shipped checkpoint's σ, C, q and steps (read from its ledger), audited with m canaries; prints the stated ε
beside ε̂ (95% confidence) and the positive controls' ε̂ (noise scaled down 4×, a canary ten times its bound).

    python benchmarks/canary_audit.py [--canaries 10000]

ε̂ is a lower bound: far below the stated ε on a sound mechanism, by the one-run method's slack. A broken
mechanism shows up as ε̂ above the stated ε (``tests/auditing/test_canaries.py`` pins that for tiny plans).
"""

from __future__ import annotations

import argparse
import json
import logging
import warnings

from zoo.auditing.canaries import Release, audit_dp_sgd, audit_one_shot_release, gaussian_release_at
from zoo.release.registry import checkpoints_dir

#: (checkpoint, barrier) whose main ledger entry sets the audited plan
AUDITED = (
    ("dp-merf-mnist-eps1", "B1"),
    ("dp-merf-mnist-eps10", "B1"),
    ("dp-lflow-mnist-eps10", "B4"),
    ("dp2-vae-mnist-eps10", "B4"),
)


def ledger_entry(model_id: str, barrier: str) -> tuple[dict, float]:
    config = json.loads((checkpoints_dir() / model_id / "config.json").read_text())
    entry = next(e for e in config["privacy_ledger"]["entries"] if e["barrier"] == barrier)
    return entry, config["headline"]["epsilon"]


def quarter_noise(release: Release) -> Release:
    """``release`` with its noise scaled down 4× (a positive control)."""
    return lambda statistic: statistic + (release(statistic) - statistic) / 4


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--canaries", type=int, default=10_000)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    logging.getLogger("pytorch_lightning").setLevel(logging.ERROR)
    print(
        "| checkpoint | barrier | σ, q, steps | stated ε | ε̂ as written | ε̂, noise / 4 | ε̂, canary 10× its bound "
        "(B1 trusts the bound; DP-SGD clips it) |"
    )
    print("|---|---|---|---|---|---|---|")
    for model_id, barrier in AUDITED:
        entry, stated = ledger_entry(model_id, barrier)
        sigma, rate, steps, delta = entry["noise_multiplier"], entry["sample_rate"], entry["steps"], entry["delta"]
        if barrier == "B1":
            honest = gaussian_release_at(stated, delta)
            audits = [
                audit_one_shot_release(honest, args.canaries, delta),
                audit_one_shot_release(quarter_noise(honest), args.canaries, delta),
                audit_one_shot_release(honest, args.canaries, delta, term_norm=10.0),
            ]
        else:
            clip = entry["clip_norm"]
            audits = [
                audit_dp_sgd(args.canaries, sigma, rate, steps, delta, clip)[0],
                audit_dp_sgd(args.canaries, sigma / 4, rate, steps, delta, clip)[0],
                audit_dp_sgd(args.canaries, sigma, rate, steps, delta, clip, record_norm=10 * clip)[0],
            ]
        cells = " | ".join(f"{audit.epsilon:.3g}" for audit in audits)
        print(f"| {model_id} | {barrier} | {sigma:.3g}, {rate:g}, {steps:,} | {stated:g} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
