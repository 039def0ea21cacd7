"""Score a trained DP-NF recipe on its held-out validation rows: the rows ``validation_fraction`` keeps
out of the private training rows (the dataset id says ``minus-validation``), never the test rows.
Loads the model the recipe saved (``save_pretrained``), rebuilds the recipe's data, checks that the
model's ledger protects exactly those training rows, and prints the mean validation log-likelihood
(nats per row, table units).

    dpzoo fit --config configs/dp_nf_half_moons_eps1.yaml --overwrite
    python experiments/dp_nf/dp_nf_validation.py configs/dp_nf_half_moons_eps1.yaml
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

import zoo
from zoo.data import TableDataModule


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", help="a DP-NF recipe (configs/dp_nf_*.yaml) with validation_fraction > 0")
    args = parser.parse_args()
    recipe = yaml.safe_load(Path(args.config).read_text())
    data = TableDataModule(**recipe["data"]["init_args"])
    data.setup()
    if not len(data.validation_rows):
        raise SystemExit(f"{args.config} holds out no validation rows: set data.init_args.validation_fraction")
    model = zoo.load(recipe["save_pretrained"])
    protected = set(model.privacy_ledger.guarantees())
    if protected != {data.dataset_id}:
        raise SystemExit(f"the saved model protects {sorted(protected)}, not the recipe's {data.dataset_id}")
    report = {
        "config": args.config,
        "dataset_id": data.dataset_id,
        "validation_rows": len(data.validation_rows),
        "validation_log_likelihood": round(float(model.log_prob(data.validation_rows).mean()), 4),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
