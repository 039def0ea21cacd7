"""DP-NF against DP-MoG over the DP-NF paper's random 90/10 splits: mean ± std test log-likelihood.

For each split k, trains the recipe with ``--data.init_args.split k`` (a fresh private run
on that split's training rows), then scores its test rows with the model and with a DP-MoG
fitted at the model's own (ε, δ) on the same rows. Prints a Markdown table and writes JSON.

    python benchmarks/dp_nf_splits.py configs/dp_nf_lifesci_eps1.yaml [--splits 10] [--json out.json] \
        [recipe overrides, e.g. --trainer.max_steps=5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import warnings

from zoo.fit import run_fit
from zoo.metrics import evaluate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", help="a DP-NF recipe (configs/dp_nf_*.yaml)")
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--json", default=None, help="also write the per-split numbers here")
    args, overrides = parser.parse_known_args()
    warnings.filterwarnings("ignore", message=".*(LeafSpec|IterableDataset|litlogger).*")
    rows = []
    for split in range(args.splits):
        model = run_fit(
            ["--config", args.config, f"--data.init_args.split={split}", "--save_pretrained=null"]
            + ["--trainer.enable_progress_bar=false", *overrides]
        )
        table = model.trainer.datamodule.table
        results = evaluate(model.eval(), table, metrics=("log_likelihood", "dp_mog"), split=split, progress=False)
        row = {
            "split": split,
            "epsilon": next(iter(model.privacy_ledger.guarantees().values()))["epsilon"],
            "dp_nf": results["results"]["log_likelihood"]["value"],
            "dp_mog": results["results"]["dp_mog"]["value"],
        }
        rows.append(row)
        print(
            f"split {split}: ε = {row['epsilon']:.3f}, DP-NF {row['dp_nf']:.3f}, DP-MoG {row['dp_mog']:.3f}", flush=True
        )
    print(f"\n{args.config}: test log-likelihood (nats per row), {args.splits} splits")
    print("| model | mean | std | splits where DP-NF is higher |")
    print("|---|---|---|---|")
    wins = sum(r["dp_nf"] > r["dp_mog"] for r in rows)
    for name in ("dp_nf", "dp_mog"):
        values = [r[name] for r in rows]
        spread = statistics.stdev(values) if len(values) > 1 else 0.0
        print(f"| {name} | {statistics.fmean(values):.3f} | {spread:.3f} | {wins}/{len(rows)} |")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=2)


if __name__ == "__main__":
    main()
