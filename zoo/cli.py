"""The ``dpzoo`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.data.images import DataNotFoundError
from zoo.hub import CheckpointError
from zoo.privacy.errors import PrivacyConfigError
from zoo.registry import UnknownModelError

if TYPE_CHECKING:
    import torch

USER_ERRORS = (PrivacyConfigError, DataNotFoundError, CheckpointError, UnknownModelError, ValueError)


def _list(args: argparse.Namespace) -> int:
    from zoo.loading import list_models

    models = list_models()
    if not models:
        print("no models yet: train one with `dpzoo fit --config configs/<recipe>.yaml`")
        return 0
    print(f"{'model id':<30}{'method':<32}{'ε':>8}{'δ':>9}  dataset")
    for m in models:
        print(f"{m['model_id']:<30}{m['method']:<32}{m['epsilon']:>8.3g}{m['delta']:>9.0e}  {m['dataset']}")
    return 0


def _sample(args: argparse.Namespace) -> int:
    from torchvision.utils import save_image

    from zoo.loading import load

    model = load(args.model)
    labels = [int(v) for v in args.labels.split(",")] if args.labels else None
    samples = model.sample(args.n, labels=labels, seed=args.seed)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if samples.dim() == 2:
        _write_rows(samples, out)
    else:
        save_image(samples, out, nrow=args.nrow or model.num_classes or 8, padding=2, pad_value=1.0)
    print(f"wrote {args.n} samples of {args.model} to {out}")
    for dataset, guarantee in model.privacy_ledger.guarantees().items():
        print(
            f"privacy: (ε = {guarantee['epsilon']:.3g}, δ = {guarantee['delta']:g})-DP for {dataset} "
            f"({', '.join(guarantee['accountants'])} accountant)"
        )
    evaluation = (getattr(model, "pretrained_config", None) or {}).get("evaluation")
    if evaluation:
        print(f"evaluation ({evaluation['command']}):")
        for result in evaluation["results"]:
            print(f"  {result['metric_name']}: {result['metric_value']}")
    return 0


def _write_rows(rows: torch.Tensor, out: Path) -> None:
    """Table rows as CSV (no header), ``.npy``, or a picture (``.png``: scatter or histograms)."""
    import numpy as np

    from zoo.plots import feature_histograms, plot_bounds, scatter_panel

    if out.suffix == ".csv":
        np.savetxt(out, rows.numpy(), delimiter=",", fmt="%.6g")
    elif out.suffix == ".npy":
        np.save(out, rows.numpy())
    elif out.suffix == ".png":
        picture = scatter_panel(rows, plot_bounds(rows)) if rows.shape[1] == 2 else feature_histograms(rows)
        picture.save(out)
    else:
        raise ValueError(f"table rows are written as .csv, .npy or .png, not {out.suffix or 'no suffix'!r}")


def _evaluate(args: argparse.Namespace) -> int:
    import json
    import shlex

    from zoo.hub import record_evaluation
    from zoo.loading import resolve
    from zoo.metrics import evaluate
    from zoo.metrics.evaluate import evaluator_of
    from zoo.metrics.publication import check_publishable

    metrics = tuple(args.metrics.split(","))
    if args.write_card:
        check_publishable(metrics)  # before any work
    folder = resolve(args.model)
    evaluation = evaluate(
        folder,
        args.dataset,
        metrics=metrics,
        num_samples=args.num_samples,
        seed=args.seed,
        runs=args.runs,
        epochs=args.epochs,
        feature_extractor_weights_path=args.feature_extractor_weights,
        label=args.label,
        split=args.split,
    )
    print(f"{'metric':<14}{'value':>10}{'± std':>9}  protocol")
    for name, result in evaluation["results"].items():
        spread = f"{result['std']:>9.3f}" if "std" in result else " " * 9
        print(f"{name:<14}{result['value']:>10.3f}{spread}  {evaluator_of(result)}")
    if args.json:
        Path(args.json).write_text(json.dumps(evaluation, indent=2) + "\n")
        print(f"wrote {args.json}")
    if args.write_card:
        command = "dpzoo " + shlex.join(args.argv)
        figures = _table_figures(folder, evaluation)
        record_evaluation(folder, evaluation, command, figures)
        print(f"recorded the evaluation in {folder} (config.json and README.md)")
    return 0


def _table_figures(folder: Path, evaluation: dict[str, Any]) -> list[str]:
    """For a table: the model's samples (and density, in 2-D) next to the real test rows, and the
    anomaly-detection ROC curve when it was measured."""
    from zoo.data import TableDataModule
    from zoo.data.tables import TABLES
    from zoo.loading import load
    from zoo.plots import roc_picture, table_model_picture

    if evaluation["dataset"] not in TABLES:
        return []
    data = TableDataModule(evaluation["dataset"], split=evaluation["split"], standardisation="public")
    data.setup()
    table_model_picture(load(folder), real=data.test_rows).save(folder / "real_vs_synthetic.png")
    figures = ["real_vs_synthetic.png"]
    anomaly = evaluation["results"].get("anomaly_auroc")
    if anomaly:
        title = f"anomaly detection by log-likelihood, AUROC {anomaly['value']:.3f}"
        roc_picture(anomaly["roc"]["fpr"], anomaly["roc"]["tpr"], title).save(folder / "anomaly_roc.png")
        figures.append("anomaly_roc.png")
    return figures


def _card(args: argparse.Namespace) -> int:
    from zoo.cards import model_card
    from zoo.hub import CARD_NAME, default_load_name, load_config

    folder = Path(args.folder)
    config = load_config(folder)
    model_card(config, default_load_name(config["model_id"], folder)).save(folder / CARD_NAME)
    print(f"wrote {folder / CARD_NAME}")
    return 0


def _model_cards(args: argparse.Namespace) -> int:
    from zoo.cards import model_cards_index
    from zoo.registry import checkpoints_dir

    target = checkpoints_dir().parent / "MODEL_CARDS.md"
    content = model_cards_index(checkpoints_dir())
    if args.check:
        if not target.exists() or target.read_text() != content:
            print(f"{target} is out of date: run `dpzoo model-cards`", file=sys.stderr)
            return 1
        print(f"{target} is up to date")
        return 0
    target.write_text(content)
    print(f"wrote {target}")
    return 0


def _push(args: argparse.Namespace) -> int:
    from zoo.hub import push_folder
    from zoo.loading import resolve

    print(push_folder(resolve(args.model), args.repo, token=args.token, private=args.private))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dpzoo", description="Differentially private generative models for PyTorch Lightning."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    commands.add_parser("list", help="list model ids with method, (ε, δ) and dataset").set_defaults(run=_list)

    commands.add_parser(
        "fit",
        help="train a method from a YAML recipe (LightningCLI; `dpzoo fit --help` for its options)",
        add_help=False,
    )

    sample = commands.add_parser("sample", help="write a sample grid (images) or rows (tables) from a model")
    sample.add_argument("model", help="model id, folder, or hf-hub:org/name")
    sample.add_argument("--n", type=int, default=64, help="number of samples (default: 64)")
    sample.add_argument(
        "--out", default="samples.png", help="PNG grid; for tables also .csv or .npy rows (default: samples.png)"
    )
    sample.add_argument("--seed", type=int, default=0, help="seed (default: 0)")
    sample.add_argument("--labels", default=None, help="comma-separated class per sample (class-conditional models)")
    sample.add_argument(
        "--nrow", type=int, default=None, help="images per grid row (default: one per class, or 8 when unconditional)"
    )
    sample.set_defaults(run=_sample)

    evaluate = commands.add_parser("evaluate", help="evaluate a model: torch-fidelity metrics and CAS")
    evaluate.add_argument("model", help="model id, folder, or hf-hub:org/name")
    evaluate.add_argument("--dataset", default="mnist", help="real data to compare with (default: mnist)")
    evaluate.add_argument("--metrics", default="fid_lenet,cas", help="comma-separated (default: fid_lenet,cas)")
    evaluate.add_argument("--label", type=int, default=None, help="compare with one class only (one-class models)")
    evaluate.add_argument(
        "--num-samples", type=int, default=None, help="synthetic samples (default: 10000 images; tables: training rows)"
    )
    evaluate.add_argument("--split", type=int, default=0, help="tables: the 90/10 split the model was trained on")
    evaluate.add_argument("--runs", type=int, default=5, help="CAS training runs (default: 5)")
    evaluate.add_argument("--epochs", type=int, default=10, help="CAS epochs for MLP/CNN/ResNet (default: 10)")
    evaluate.add_argument("--seed", type=int, default=0, help="seed for sampling and classifiers")
    evaluate.add_argument("--feature-extractor-weights", default=None, help="local Inception weights for fid/kid/isc")
    evaluate.add_argument("--json", default=None, help="also write the results as JSON here")
    evaluate.add_argument("--write-card", action="store_true", help="record the results in the model's config and card")
    evaluate.set_defaults(run=_evaluate)

    card = commands.add_parser("card", help="regenerate a model folder's README.md card from its config.json")
    card.add_argument("folder", help="a model folder in Hub layout")
    card.set_defaults(run=_card)

    cards = commands.add_parser("model-cards", help="regenerate MODEL_CARDS.md from checkpoints/")
    cards.add_argument("--check", action="store_true", help="only check that MODEL_CARDS.md is up to date")
    cards.set_defaults(run=_model_cards)

    push = commands.add_parser("push", help="upload a model folder to the Hugging Face Hub")
    push.add_argument("model", help="model id or folder")
    push.add_argument("--repo", required=True, help="Hub repository, org/name")
    push.add_argument("--token", default=None, help="Hub token (default: HF_TOKEN or the saved login)")
    push.add_argument("--private", action="store_true", help="create the repository as private")
    push.set_defaults(run=_push)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["fit"]:
        from zoo.fit import run_fit

        try:
            run_fit(argv[1:])
        except USER_ERRORS as error:
            print(f"dpzoo fit: error: {error}", file=sys.stderr)
            return 2
        return 0
    args = build_parser().parse_args(argv)
    args.argv = argv
    try:
        return args.run(args)
    except USER_ERRORS as error:
        print(f"dpzoo {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
