"""The ``dpzoo`` command line. Heavy libraries (torch, Lightning) are imported by the command
that needs them, so ``dpzoo --help`` answers at once."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
ROW_SUFFIXES = (".csv", ".npy", ".png")


def _user_errors() -> tuple[type[Exception], ...]:
    """Errors that mean bad input, answered with their message instead of a traceback (the privacy,
    data and shape errors are ValueErrors or FileNotFoundErrors; these imports stay light)."""
    from zoo.layout import CheckpointError
    from zoo.registry import UnknownModelError

    return (CheckpointError, UnknownModelError, ValueError, FileNotFoundError, FileExistsError)


def _list(args: argparse.Namespace) -> int:
    from zoo.loading import list_models

    models = list_models()
    if not models:
        print("no models yet: train one with `dpzoo fit --config configs/<recipe>.yaml`")
        return 0
    width = max(len(m["model_id"]) for m in models) + 2
    guarantee_width = max(len(m["guarantee"]) for m in models) + 2
    print(f"{'model id':<{width}}{'method':<32}{'guarantee':<{guarantee_width}}dataset")
    for m in models:
        print(f"{m['model_id']:<{width}}{m['method']:<32}{m['guarantee']:<{guarantee_width}}{m['dataset']}")
    return 0


def _refuse_existing(path: Path, option: str, overwrite: bool) -> None:
    """Before any work: a file the command would write is never replaced unless ``--overwrite`` says so."""
    if path.exists() and not overwrite:
        raise FileExistsError(f"{option} {path} exists: pass --overwrite to replace it, or choose another path")


def _sample(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.suffix.lower() not in {*IMAGE_SUFFIXES, *ROW_SUFFIXES}:
        raise ValueError(
            f"--out must end in {', '.join(IMAGE_SUFFIXES)} (a picture) or, for table models, "
            f"{', '.join(ROW_SUFFIXES)} (rows); got {out.suffix or 'no suffix'!r}"
        )
    _refuse_existing(out, "--out", args.overwrite)
    from zoo.loading import load

    model = load(args.model)
    from zoo.privacy.pac import describe_pac  # after load: an unknown id answers before torch is imported

    labels = [int(v) for v in args.labels.split(",")] if args.labels else None
    samples = model.sample(args.n, labels=labels, seed=args.seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    if model.sample_kind == "rows":
        _write_rows(samples, out)
    else:
        _write_images(samples, out, args.nrow or model.num_classes or 8)
    print(f"wrote {args.n} samples of {args.model} to {out}")
    for dataset, guarantee in model.privacy_ledger.guarantees().items():
        print(
            f"privacy: (ε = {guarantee['epsilon']:.3g}, δ = {guarantee['delta']:g})-DP for {dataset} "
            f"({', '.join(guarantee['accountants'])} accountant)"
        )
    for release in model.privacy_ledger.pac_releases:
        print(f"{describe_pac(release)} for {release.dataset_id}")
    evaluation = (model.pretrained_config or {}).get("evaluation")
    if evaluation:
        print(f"evaluation ({evaluation['command']}):")
        for result in evaluation["results"]:
            print(f"  {result['metric_name']}: {result['metric_value']}")
    return 0


def _write_images(images: torch.Tensor, out: Path, columns: int) -> None:
    if out.suffix.lower() not in IMAGE_SUFFIXES:
        raise ValueError(f"images are written as {', '.join(IMAGE_SUFFIXES)}, not {out.suffix!r}")
    from torchvision.utils import save_image

    save_image(images, out, nrow=columns, padding=2, pad_value=1.0)


def _write_rows(rows: torch.Tensor, out: Path) -> None:
    """Table rows as CSV (with a header), ``.npy``, or a picture (``.png``: scatter or histograms)."""
    import numpy as np

    from zoo.plots import feature_histograms, plot_bounds, scatter_panel

    suffix = out.suffix.lower()
    if suffix == ".csv":
        header = ",".join(f"feature_{j}" for j in range(rows.shape[1]))
        np.savetxt(out, rows.numpy(), delimiter=",", fmt="%.6g", header=header, comments="")
    elif suffix == ".npy":
        np.save(out, rows.numpy())
    elif suffix == ".png":
        picture = scatter_panel(rows, plot_bounds(rows)) if rows.shape[1] == 2 else feature_histograms(rows)
        picture.save(out)
    else:
        raise ValueError(f"table rows are written as {', '.join(ROW_SUFFIXES)}, not {out.suffix!r}")


def _evaluate(args: argparse.Namespace) -> int:
    import json
    import shlex

    from zoo.cards import evaluator_of
    from zoo.loading import resolve
    from zoo.metrics import evaluate, record_evaluation
    from zoo.metrics.publication import check_publishable

    metrics = tuple(args.metrics.split(",")) if args.metrics else None
    if args.json:
        _refuse_existing(Path(args.json), "--json", args.overwrite)
    if args.write_card:
        check_publishable(metrics or ())  # before any work
    folder = resolve(args.model)
    options = {
        "runs": args.runs,
        "epochs": args.epochs,
        "feature_extractor_weights_path": args.feature_extractor_weights,
        "label": args.label,
        "split": args.split,
        "reference": args.reference,
    }
    evaluation = evaluate(
        folder,
        args.dataset,
        metrics=metrics,
        num_samples=args.num_samples,
        seed=args.seed,
        figures=args.write_card,
        **{name: value for name, value in options.items() if value is not None},
    )
    width = max([len("metric"), *map(len, evaluation["results"])]) + 2
    print(f"{'metric':<{width}}{'value':>10}{'± std':>9}  protocol")
    for name, result in evaluation["results"].items():
        spread = f"{result['std']:>9.3f}" if "std" in result else " " * 9
        print(f"{name:<{width}}{result['value']:>10.3f}{spread}  {evaluator_of(result)}")
    if args.json:
        report = {k: v for k, v in evaluation.items() if k != "figures"}
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {args.json}")
    if args.write_card:
        record_evaluation(folder, evaluation, "dpzoo " + shlex.join(_without_local_report(args.argv)))
        print(f"recorded the evaluation in {folder} (config.json and README.md)")
    return 0


def _without_local_report(argv: list[str]) -> list[str]:
    """``evaluate``'s arguments as a card records them: where this machine wrote its own report (``--json``,
    ``--overwrite``) changes no number and would publish a local path."""
    kept: list[str] = []
    skip_value = False
    for arg in argv:
        if skip_value or arg == "--overwrite" or arg.startswith("--json="):
            skip_value = False
        elif arg == "--json":
            skip_value = True
        else:
            kept.append(arg)
    return kept


def _card(args: argparse.Namespace) -> int:
    from zoo.cards import model_card
    from zoo.layout import CARD_NAME, default_load_name, load_config

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


def _metric_names() -> str:
    import zoo.metrics  # noqa: F401  (every family registers its evaluation)
    from zoo.metrics.datasets import evaluators
    from zoo.metrics.publication import LOCAL_DIAGNOSTICS

    lines = [f"{', '.join(e.datasets)}: {', '.join(e.metrics)}" for e in evaluators()]
    return "; ".join(lines) + f". Local diagnostics (never on a card): {', '.join(LOCAL_DIAGNOSTICS)}."


def build_parser(list_metrics: bool = False) -> argparse.ArgumentParser:
    """``list_metrics`` names every metric in ``dpzoo evaluate --help`` (it imports the metrics)."""
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
        "--out",
        default="samples.png",
        help=f"a picture ({', '.join(IMAGE_SUFFIXES)}: a grid of images, or for tables a scatter/histogram); "
        "table rows also as .csv (with a header) or .npy (default: samples.png)",
    )
    sample.add_argument("--seed", type=int, default=0, help="seed (default: 0)")
    sample.add_argument("--labels", default=None, help="comma-separated class per sample (class-conditional models)")
    sample.add_argument(
        "--nrow", type=int, default=None, help="images per grid row (default: one per class, or 8 when unconditional)"
    )
    sample.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    sample.set_defaults(run=_sample)

    metric_help = "comma-separated (default: fid_lenet,cas for mnist/fashion_mnist, fid,cas for an image folder)"
    if list_metrics:
        metric_help += f". By dataset: {_metric_names()}"
    evaluate = commands.add_parser("evaluate", help="evaluate a model: torch-fidelity metrics, CAS, densities")
    evaluate.add_argument("model", help="model id, folder, or hf-hub:org/name")
    evaluate.add_argument(
        "--dataset",
        default="mnist",
        help="real data to compare with: a named dataset, or an image folder (evaluated on its test/ part); "
        "default: mnist",
    )
    evaluate.add_argument(
        "--reference",
        default=None,
        help="image folders without test/: a folder of held-out images (root/<class>/*) to evaluate against",
    )
    evaluate.add_argument("--metrics", default=None, help=metric_help)
    evaluate.add_argument("--label", type=int, default=None, help="images: compare with one class (one-class models)")
    evaluate.add_argument(
        "--num-samples", type=int, default=None, help="synthetic samples (default: 10000 images; tables: training rows)"
    )
    evaluate.add_argument("--split", type=int, default=None, help="tables: the 90/10 split the model was trained on")
    evaluate.add_argument("--runs", type=int, default=None, help="images: CAS training runs (default: 5)")
    evaluate.add_argument(
        "--epochs", type=int, default=None, help="images: CAS epochs for MLP/CNN/ResNet (default: 10)"
    )
    evaluate.add_argument("--seed", type=int, default=0, help="seed for sampling and classifiers")
    evaluate.add_argument("--feature-extractor-weights", default=None, help="local Inception weights for fid/kid/isc")
    evaluate.add_argument("--json", default=None, help="also write the results as JSON here")
    evaluate.add_argument("--overwrite", action="store_true", help="replace the --json file if it exists")
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
    command = argv[0] if argv else None
    try:
        if command == "fit":
            from zoo.fit import run_fit

            run_fit(argv[1:])
            return 0
        args = build_parser(list_metrics=command == "evaluate" and ("-h" in argv or "--help" in argv)).parse_args(argv)
        args.argv = argv
        return args.run(args)
    except Exception as error:
        if not isinstance(error, _user_errors()):
            raise
        print(f"dpzoo {command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
