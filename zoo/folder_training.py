"""``dpzoo train FOLDER --method M --epsilon E``: one command for the common case.

The options are checked first (``zoo.train_request``, which the command line runs before importing this module),
then the folder once (every problem at once, each fix a flag to paste: ``zoo.data.folder_check``; too few classes
or images per class among them), the method's recipe chosen for its images in the open (``zoo.recipes``), the
folder decoded (as training reads it, so that training finds the decoded copy), and before any training a summary
says what will be used: images per class, sizes, what reading does to them, the files that hold one image (each
distinct image is one record, trained once), the held-out part (a folder without ``test/`` keeps one, each image
by a hash of its pixels: ``zoo.data.folders.split_by_pixels``), and an estimated time from a measured rate
(``zoo.estimate``). The plan is the chosen recipe with the folder's settings changed, as a mapping
(``FolderPlan.recipe``), run as ``dpzoo fit`` runs a recipe (``zoo.fit.run_recipe``), and the ε spent and the
card's place are printed."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import inspect
import json
import logging
import shlex
import warnings
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# before opacus, whose import sets up the root logger: Lightning's lines then print as `dpzoo fit` prints them
import pytorch_lightning  # noqa: F401
from pytorch_lightning import LightningDataModule

from zoo.data.conversion import (
    check_convert,
    colour_mode,
    counted,
    downscale_sentence,
    pixels,
    preprocessing_sentence,
)
from zoo.data.folder_check import (
    Fix,
    FolderProblems,
    PartFacts,
    class_problems,
    common_channels,
    common_size,
    duplicates_lines,
    folder_problems,
    ignored_line,
    ignored_names,
    inspect_part,
)
from zoo.data.folder_part import names_root
from zoo.data.folders import (
    FolderPart,
    FolderSplit,
    read_part,
    split_by_pixels,
    subset,
)
from zoo.data.sources import FOLDER, LocalImages, local_parts
from zoo.errors import UserError
from zoo.fit import TrainedRun, interrupted_checkpoint, resume_command, run_recipe, say
from zoo.forecast import release_sigma
from zoo.front_checks import parse_duration
from zoo.methods import DPGenerativeModel, method_class
from zoo.privacy import Budget, record_index
from zoo.public_bases import USE_BELOW, PublicBase, base_for, base_image_shape, base_shape_problems
from zoo.recipe_cli import IMAGE_FOLDER, kept_data_settings, parse_recipe
from zoo.recipes import Choice, Problem, choose_recipe
from zoo.release.layout import CARD_NAME, CONFIG_NAME
from zoo.release.loading import resolve
from zoo.release_shapes import SHRINKING_METHODS, ShapeChoice, choose_shape, class_sigma, shapes_for, signal_to_noise
from zoo.run_plan import Provenance, RunOptions
from zoo.train_request import TrainRequest

#: the fraction of each class a folder without test/ keeps out of training, and the seed of its hash
HELD_OUT = 0.1
SPLIT_SEED = 0
#: the validation share an image folder keeps when the recipe reads it (ImageFolderDataModule's default)
VALIDATION = 0.1
#: the window of steps over which dpzoo train reads whether a mean-embedding fit's objective still moves
#: (``lightning_modules.parts.mean_embedding``: the fit stops once it does not; --max-steps sets a fixed length)
FLAT_WINDOW = 100
#: an estimated time above this many seconds is followed by what would shorten it
LONG_RUN = 3600
#: the recipes' generators that draw images of any size, so that a folder of larger images may be read larger
ANY_SIZE_GENERATORS = ("upsampling",)
#: the logger of Lightning's "Seed set to N" line (``_without_seed_line``)
SEED_LOGGER = "lightning_fabric.utilities.seed"
#: the warnings of an image folder that the summary has said already: ignored files, files that hold one image
NAMED_IN_THE_SUMMARY = (
    r".*: ignored [\d,]+ (files? that|hidden folder)",
    r".*: [\d,]+ images? appears? in more than one",
)


def train_flag(name: str, value: Any) -> str:
    """An option as ``dpzoo train`` takes it (``zoo.data.folder_check`` spells fixes with it)."""
    flag = f"--{name.replace('_', '-')}"
    return flag if value is True else f"{flag} {value}"


@dataclass(frozen=True)
class FolderPlan:
    """What ``dpzoo train`` found in a folder and chose for it, before any training."""

    root: Path
    #: what the data at ``root`` was recognised as (``zoo.data.sources``)
    kind: LocalImages
    #: the training part's facts, then the test part's where the folder has ``test/``
    inspected: list[PartFacts]
    choice: Choice
    #: the channels every image is read with
    channels: int
    #: the training part's files that train, validate and are held out (none where the folder has ``test/``)
    split: FolderSplit
    #: the training images of each class (validation included)
    trained: Counter[int]
    #: the release's shape, sized to the class counts (None: the method's release is not sized)
    shape: ShapeChoice | None = None
    #: the public base used or proposed for a small folder (None: none)
    base: BaseChoice | None = None

    def with_base(self, request: TrainRequest) -> TrainRequest:
        """The request as it runs: with ``--init-from`` the base where one is used."""
        if self.base is None or not self.base.used:
            return request
        return dataclasses.replace(request, init_from=self.base.base.model_id)

    @property
    def recipe_steps(self) -> int | None:
        """The steps the chosen recipe plans for its last stage (None: it sets none)."""
        return (self.choice.recipe.settings.get("trainer") or {}).get("max_steps")

    def recipe(self, request: TrainRequest) -> dict[str, Any]:
        """The chosen recipe with what ``dpzoo train`` changes: the data is the folder, read as planned (of the
        recipe's data settings only ``zoo.recipe_cli.KEPT_FROM_RECIPE``, as ``--images`` keeps), the model is built
        for it (``data_arguments``), and the budget and bounds are the request's. Where the model goes is not a
        setting: ``run_options``."""
        settings = copy.deepcopy(self.choice.recipe.settings)
        folder = {
            "root": str(self.root),
            **kept_data_settings(settings.get("data")),
            "image_size": list(self.choice.size),
            "channels": self.channels,
            "convert": request.convert,
            "classes": list(request.classes) if request.classes else None,
            **{name: value for name, value in request.columns().items() if value},
        }
        if len(self.inspected) == 1:
            folder["test_fraction"] = HELD_OUT
        if not self.choice.recipe.validates:
            folder["validation_size"] = 0
        settings["data"] = {"class_path": IMAGE_FOLDER, "init_args": folder}
        model = settings["model"].setdefault("init_args", {})
        model.update(self.data_arguments(request))
        if self.shape is not None and self.shape.resized:
            model.update(self.shape.shape.changes)
        if request.shared_part:
            model["shared_weight"] = request.shared_part
        if request.method in SHRINKING_METHODS and not request.no_shrink:
            model["shrink_to_common"] = True
        if self.stops_when_flat(request):
            model["stop_when_flat"] = FLAT_WINDOW
        budget = {"target_epsilon": request.epsilon, "delta": request.delta}
        if request.assume_disjoint:
            budget["assume_disjoint"] = True
        settings["privacy"].setdefault("init_args", {}).update(budget)
        trainer = settings.setdefault("trainer", {})
        if request.max_steps:
            trainer["max_steps"] = request.max_steps
        if request.max_time:
            trainer["max_time"] = {"seconds": round(parse_duration(request.max_time))}
        return settings

    def data_arguments(self, request: TrainRequest) -> dict[str, Any]:
        """The model's arguments that follow the data (``zoo.methods.DATA_ARGUMENTS``), as the folder gives them:
        written into the recipe before it is parsed, so that the model is built once, at the data's shape."""
        given = {"image_shape": [self.channels, *self.choice.size], "num_classes": len(self.inspected[0].part.classes)}
        accepted = inspect.signature(method_class(request.method)).parameters
        return {name: value for name, value in given.items() if name in accepted}

    def run_options(self, request: TrainRequest, target: Path) -> RunOptions:
        """Where the model is saved and what it starts from: the request's, and the recipe's weights' precision."""
        return RunOptions(
            save_pretrained=str(target),
            weights_dtype=self.choice.recipe.settings.get("weights_dtype", RunOptions.weights_dtype),
            license=request.license,
            overwrite=request.overwrite,
            init_from=request.init_from,
        )

    def stops_when_flat(self, request: TrainRequest) -> bool:
        """Whether the fit ends when its objective stops moving: a mean-embedding method, without --max-steps."""
        method = method_class(request.method)
        return "stop_when_flat" in inspect.signature(method).parameters and not request.max_steps

    def provenance(self, request: TrainRequest) -> Provenance:
        """The card's account: the ``dpzoo train`` command, the recipe chosen, and how."""
        name = self.choice.recipe.path.name
        selection = (
            f"dpzoo train chose configs/{name}: {self.choice.reason}. Its settings were chosen on the named "
            "dataset's validation images (see the recipe), not on this data."
        )
        return Provenance(request.card_command(), f"configs/{name}", selection)


def train_folder(folder: str, method: str, epsilon: float, **options: Any) -> Path:
    """Train ``method`` at (``epsilon``, ``delta``) on the images at ``folder`` (a folder of class folders, a CSV or
    Parquet table, a saved ``datasets`` dataset: ``zoo.data.sources``) and save it in ``out`` (default
    ``out/<folder>-<method>``); returns the model folder. ``options``: those of
    ``zoo.train_request.TrainRequest`` (``delta``, ``out``, ``max_steps``, ``convert``, ...). Every bad input is
    refused before any work, and before the summary."""
    request = TrainRequest(folder, method, epsilon, **options)
    return train_checked(request, request.check())


def train_checked(request: TrainRequest, target: Path) -> Path:
    """``train_folder`` for a request whose options ``request.check()`` passed, saving in ``target``."""
    check_convert(request.convert)
    plan = plan_folder(request)
    say(_summary(plan, request.convert))
    interrupted = interrupted_checkpoint(target)
    if interrupted.exists():
        say(
            f"an interrupted run into this --out is saved at {interrupted}: to resume it instead, stop this one "
            f"(Ctrl-C) and run `{resume_command(interrupted)}`; this run replaces it if it is interrupted too"
        )
    request = plan.with_base(request)
    with warnings.catch_warnings(), _without_seed_line():
        for named in NAMED_IN_THE_SUMMARY:
            warnings.filterwarnings("ignore", message=named, category=UserWarning)
        recipe = parse_recipe(plan.recipe(request))
        run = run_recipe(
            recipe, plan.run_options(request, target), plan.provenance(request), before_training=_before_training
        )
    _after_training(run, plan, request)
    return target


class _SeedLineFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "Seed set to" not in record.getMessage()


@contextlib.contextmanager
def _without_seed_line() -> Iterator[None]:
    """Without Lightning's "Seed set to 0" for the recipe's ``seed_everything``, which reads as the seed of the noise:
    the summary says what the seed seeds instead (``_summary``)."""
    logger = logging.getLogger(SEED_LOGGER)
    quiet = _SeedLineFilter()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


def plan_folder(request: TrainRequest) -> FolderPlan:
    """The folder read once: its parts and images, the recipe for them, the held-out part; every problem of the
    folder and of the request against it is raised at once (``FolderProblems``, fixes spelled as flags). The split
    follows the images' pixels, so the training counts of each class are known once they decode: while other
    problems stand, a class is counted by all its files."""
    root, classes, image_size, channels = request.root, request.classes, request.image_size, request.channels
    kind, train_part, test_part = local_parts(root, classes, request.image_column, request.label_column)
    parts = [train_part, *([test_part] if test_part else [])]
    inspected = [inspect_part(part) for part in parts]
    facts = [f for part in inspected for f in part.readable()]
    size = (image_size, image_size) if image_size else common_size(facts)
    choice = choose_recipe(
        request.method, request.epsilon, channels or common_channels(facts) or 3, size, image_size is not None
    )
    problems = folder_problems(
        inspected, choice.size if isinstance(choice, Choice) else None, channels, request.convert
    )
    if isinstance(choice, Problem):
        problems.append(choice)
    elif request.init_from:
        problems += base_shape_problems(request.init_from, choice.size, channels or common_channels(facts))
        problems += [] if request.assume_disjoint else _unchecked_public_data(request.init_from)
    conditional = "num_classes" in inspect.signature(method_class(request.method)).parameters
    if problems:
        problems += class_problems(train_part, Counter(train_part.labels), request.method, conditional)
        raise FolderProblems(problems, parts, train_flag)
    assert isinstance(choice, Choice)
    used_channels = channels or common_channels(facts)
    assert used_channels is not None  # mixed channels without --channels are among the problems
    split = _split(train_part, test_part, choice, used_channels, request.convert)
    trained = Counter(train_part.labels[i] for i in (*split.train, *split.validation))
    problems = class_problems(train_part, trained, request.method, conditional)
    if problems:
        raise FolderProblems(problems, parts, train_flag)
    shape, base = None, None
    if shapes_for(request.method, used_channels):  # a mean-embedding release: its σ, for the shape and the base
        sigma = release_sigma(request.epsilon, request.delta)
        counts = [trained[label] for label in range(len(train_part.classes))]
        shared = request.shared_part or 0.0
        shape = choose_shape(request.method, used_channels, sigma, counts, request.release_size, shared)
        base = _base_choice(request, used_channels, choice.size, class_sigma(sigma, shared), counts)
    if request.init_from:
        base = _given_base(request, used_channels)
    return FolderPlan(root, kind, inspected, choice, used_channels, split, trained, shape, base)


@dataclass(frozen=True)
class BaseChoice:
    base: PublicBase
    #: dpzoo train starts from it (this machine can check the folder is not among its public data); False where it
    #: is only proposed, or given already (``--init-from``)
    used: bool
    line: str


def _given_base(request: TrainRequest, channels: int) -> BaseChoice:
    """The base ``--init-from`` names, for the summary's line that says what the run starts from (with what it knows,
    where it is the shipped base for these images)."""
    assert request.init_from is not None
    name = Path(request.init_from).name
    shipped = base_for(request.method, channels)
    knows = shipped.knows if shipped is not None and shipped.model_id == name else "its card says what it knows"
    return BaseChoice(PublicBase(name, knows), False, f"base: {name}, as --init-from gives: {knows}")


def _base_choice(
    request: TrainRequest, channels: int, size: tuple[int, int], sigma: float, counts: list[int]
) -> BaseChoice | None:
    """The public base for a folder whose release at the recipe's own shape would be noisy (``zoo.public_bases``):
    used where it takes the folder's images and this machine can check the folder is not among its public data,
    proposed with the flags that use it otherwise; None where no base applies or one is given or refused."""
    base = base_for(request.method, channels)
    if request.init_from or request.no_base or base is None:
        return None
    if signal_to_noise(shapes_for(request.method, channels)[0], sigma, min(counts)) >= USE_BELOW:
        return None
    try:
        resolve(base.model_id)
    except UserError:
        return None  # not installed with this copy of the zoo
    knows = f"{base.model_id}, pretrained on public data: {base.knows}"
    flags = [f"--init-from {base.model_id}"]
    reasons = []
    if base_shape_problems(base.model_id, size, channels):
        side = base_image_shape(base.model_id)[1]
        flags.append(f"--image-size {side}")
        reasons.append(f"it draws {side}×{side} images")
    if _unchecked_public_data(base.model_id):
        flags.append("--assume-disjoint")
        reasons.append("this machine cannot check that your images are not among its public data (the flag states it)")
    if reasons:
        return BaseChoice(
            base, False, f"base: proposed, as the folder is small: {knows}; {' and '.join(reasons)}: {' '.join(flags)}"
        )
    return BaseChoice(base, True, f"base: {knows}, as the folder is small (--no-base trains from scratch)")


def _split(
    train: FolderPart, test: FolderPart | None, choice: Choice, channels: int, convert: str | None
) -> FolderSplit:
    """The training part decoded as the recipe's ``ImageFolderDataModule`` will read it (its cached copy then serves
    training), split by its pixels as that module splits it."""
    decoded = read_part(train, choice.size, channels, convert=convert, along=[test] if test else [])
    validation = VALIDATION if choice.recipe.validates else 0.0
    return split_by_pixels(decoded.record_keys.numpy(), 0.0 if test else HELD_OUT, validation, SPLIT_SEED)


def _unchecked_public_data(init_from: str) -> list[Problem]:
    """A base pretrained on public data that this machine's record index does not hold (pretrained elsewhere, as
    a downloaded base): nothing shows the folder's images are not among it, which the ledger refuses
    (``PrivacyLedger.check_private_use``) unless the user states it; said here, before any work."""
    ledger = json.loads((resolve(init_from) / CONFIG_NAME).read_text()).get("privacy_ledger") or {}
    unchecked = [
        use["dataset_id"]
        for use in ledger.get("public_data", [])
        if not use.get("assumed_disjoint") and record_index.keys_of(use.get("records_identity")) is None
    ]
    if not unchecked:
        return []
    return [
        Problem(
            f"the base {Path(init_from).name} was pretrained on public data ({', '.join(unchecked)}) that this "
            "machine's record index does not hold, so nothing shows that your images are not among it",
            (Fix((("assume_disjoint", True),), "state that none of them is: the card says so"),),
        )
    ]


def _summary(plan: FolderPlan, convert: str | None) -> str:
    """The data as it will be used, before any work."""
    inspected, choice, trained = plan.inspected, plan.choice, plan.trained
    train = inspected[0].part
    root = names_root(plan.root, train)
    test = inspected[1].part if len(inspected) > 1 else subset(train, plan.split.held_out)
    kept = Counter(test.labels)
    width = max(len("class"), *(len(name) for name in train.classes)) + 2
    if plan.kind.name == FOLDER:
        layout = "train/ and test/" if len(inspected) > 1 else "one folder per class, no test/"
    else:
        layout = f"{plan.kind.title}{', with a test split' if len(inspected) > 1 else ''}"
    lines = [
        f"{plan.root.resolve().name}: {len(train.classes)} classes ({layout})",
        f"  {'class':<{width}}training  held out",
    ]
    lines += [f"  {name:<{width}}{trained[k]:>8,}  {kept[k]:>8,}" for k, name in enumerate(train.classes)]
    lines += [f"  {line}" for line in _look_alike_classes(train.classes)]
    facts = [f for part in inspected for f in part.readable()]
    grey, transparent = sum(f.grey for f in facts), sum(f.transparent for f in facts)
    sizes = Counter(f.size for f in facts).most_common()
    shown = ", ".join(f"{pixels(size)} ×{n:,}" for size, n in sizes[:4]) + (
        f", {len(sizes) - 4} more" if sizes[4:] else ""
    )
    lines.append(f"  sizes: {shown}; {len(facts) - grey:,} colour, {grey:,} grey, {transparent:,} with transparency")
    ignored = ignored_names([p.part for p in inspected], root)
    if ignored:
        lines.append(f"  {ignored_line(ignored)}")
    if plan.split.duplicates:
        head, *groups = duplicates_lines(train, plan.split.duplicates, root)
        lines += [f"  {head}", *(f"    {group}" for group in groups)]
    sentence = preprocessing_sentence(inspected[0].readable(), choice.size, plan.channels, convert)
    lines.append(f"read as {colour_mode(plan.channels)} {pixels(choice.size)}: {sentence}")
    generator = (choice.recipe.settings["model"].get("init_args") or {}).get("generator")
    larger = 2 * min(choice.size) if generator in ANY_SIZE_GENERATORS else None
    lost = downscale_sentence(inspected[0].readable(), choice.size, larger)
    if lost:
        lines.append(f"  {lost}")
    how = (
        ("the folder's test/" if plan.kind.name == FOLDER else "its test split")
        if len(inspected) > 1
        else f"each image with chance {HELD_OUT:.0%}, by a hash of its pixels, so that copies stay together"
    )
    given = "FOLDER" if plan.kind.name == FOLDER else shlex.quote(str(plan.root))
    lines.append(
        f"held out for evaluation: {counted(len(test.files), 'image')} ({how}): never trained on, not among "
        f"the records the ledger protects; `dpzoo evaluate MODEL --dataset {given}` uses them"
    )
    validation = len(plan.split.validation)
    rest = f" ({validation:,} more kept for validation, not protected)" if validation else ""
    lines.append(f"training: {counted(len(plan.split.train), 'image')}{rest}")
    lines.append(f"recipe: configs/{choice.recipe.path.name}: {choice.reason}")
    seed = choice.recipe.settings.get("seed_everything")
    if seed is not None:
        lines.append(
            f"  its seed {seed} fixes the starting weights and the fit's own draws; the privacy noise and the Poisson "
            "sampling draw from the operating system's entropy, never from a seed (zoo.privacy.randomness)"
        )
    if plan.shape is not None:
        shape = plan.shape.shape
        lines.append(
            f"release: {shape.name} ({shape.features:,} coordinates per class: {shape.words}): {plan.shape.reason}"
        )
    if plan.base is not None:
        lines.append(plan.base.line)
    return "\n".join(lines)


def _look_alike_classes(classes: tuple[str, ...]) -> list[str]:
    """Classes whose names differ only in case or surrounding spaces (``AIRPLANE`` beside ``airplane``, a label
    column typed by hand): trained as different classes, which the user may not mean."""
    groups: dict[str, list[str]] = {}
    for name in classes:
        groups.setdefault(name.strip().casefold(), []).append(name)
    return [
        f"classes {' and '.join(names)} differ only in case or spaces: they are trained as {len(names)} classes "
        "(spell them alike to make them one)"
        for names in groups.values()
        if len(names) > 1
    ]


def _before_training(
    model: DPGenerativeModel, datamodule: LightningDataModule, budget: Budget | None, trainer_options: dict[str, Any]
) -> None:
    """Before any training: the forecast of how much of the release is noise (``zoo.forecast``), then the time."""
    from zoo.estimate import estimate_time
    from zoo.forecast import forecast_for

    forecast = forecast_for(model, datamodule, budget)
    if forecast is not None:
        say(*forecast.lines)
    say("measuring the rate of a few steps on stand-in images…")
    try:
        estimate = estimate_time(model, datamodule, budget, trainer_options)
    except Exception as error:  # a failed measurement must not stop the training it only describes
        say(f"estimated time: not measured ({type(error).__name__}: {error})")
        return
    say(f"estimated time: {estimate.line() if estimate else 'unknown (the recipe sets no number of steps)'}")
    flat = getattr(model, "flat_stop", None)
    if estimate and flat is not None:
        say(f"  at most: the fit ends once its objective stops moving (read every {flat.window} steps)")
    if estimate and estimate.seconds > LONG_RUN:
        say(
            "  over an hour: --max-time 30m trains as many steps as fit in 30 minutes, --max-steps N fewer steps; "
            "Ctrl-C saves the run to resume later"
        )
    bound = (trainer_options.get("max_time") or {}).get("seconds")
    if estimate and bound and estimate.seconds > bound:
        fit = min(estimate.steps, int(bound * estimate.rate))
        say(
            f"  --max-time stops it after about {fit:,} of the {estimate.steps:,} steps: a generator short of its "
            "steps has not finished fitting the release, and its samples will show it"
        )


def _after_training(run: TrainedRun, plan: FolderPlan, request: TrainRequest) -> None:
    """After training and saving: the steps ``--max-time`` left time for, the ε spent and where the card is."""
    model, folder, config = run.model, run.folder, run.config
    assert folder is not None and config is not None  # dpzoo train always saves (one process: rank 0)
    steps = model.trainer.global_step
    flat = getattr(model, "flat_stop", None)
    stopped_flat = flat is not None and flat.tail is not None and steps >= flat.tail[1]
    if stopped_flat:
        say(f"the fit's objective stopped moving: it ended after {steps:,} of at most {plan.recipe_steps:,} steps")
    elif request.max_time:
        planned = request.max_steps or plan.recipe_steps
        of_planned = f" of the {planned:,} planned" if planned else ""
        say(f"--max-time {request.max_time}: the last stage trained {steps:,}{of_planned} steps")
    say(
        *model.privacy_ledger.summary_lines(),
        f"  (local:… is this machine's name for the images of {plan.root.resolve().name}, keyed by a secret that never "
        "leaves it: it says nothing about them to anyone else)",
        f"card: {folder / CARD_NAME}",
    )
    kept = getattr(model, "release_kept", None)
    if kept is not None:
        classes = plan.inspected[0].part.classes
        shares = ", ".join(f"{name} {share:.0%}" for name, share in zip(classes, kept.tolist(), strict=True))
        say(
            f"shrunk: each class's released mean toward the mean of all classes, keeping this share of its own "
            f"deviation ({shares}; 0%: fitted to the common mean, its own signal buried in the noise; --no-shrink "
            "keeps the release as released)"
        )
    trained_fully = stopped_flat or plan.recipe_steps is None or steps >= plan.recipe_steps
    say(*_verdict(model, plan, request, (folder, config["data"]), trained_fully))


def _verdict(
    model: DPGenerativeModel,
    plan: FolderPlan,
    request: TrainRequest,
    saved: tuple[Path, dict[str, Any]],
    trained_fully: bool,
) -> list[str]:
    """How close the samples are to the held-out images (``zoo.metrics.closeness``), for the data owner only: the
    held-out images are theirs, outside the model's guarantee, so the number reaches the card only when asked.
    ``saved``: the model's folder and the data its config.json records; ``trained_fully``: the recipe's steps all
    ran (more steps are then no remedy)."""
    from zoo.metrics.closeness import InceptionUnavailable, TooFewHeldOut, closeness_to_held_out
    from zoo.metrics.reference import reference_images
    from zoo.metrics.sample_spread import sample_spread

    from_base = request.init_from is not None
    spread = f"spread: {sample_spread(model, list(plan.inspected[0].part.classes)).sentence(from_base)}"
    target, recorded = saved
    held_out = reference_images(str(plan.root), model.hparams.image_shape, None, recorded, model.privacy_ledger)
    if held_out.protected:
        return [
            spread,
            "verdict: not computed, because the held-out images cannot be shown to lie outside the records the model "
            f"protects: {held_out.protected}",
        ]
    say(f"measuring how close samples are to the {len(held_out.labels):,} held-out images (Inception features)…")
    try:
        result = closeness_to_held_out(model, held_out)
    except (InceptionUnavailable, TooFewHeldOut) as missing:
        return [spread, f"verdict: not computed: {missing}"]
    per_class = ", ".join(f"{name} {value:.2f}" for name, value in result.per_class.items())
    return [
        spread,
        f"verdict: {result.value:.2f}, {result.sentence(trained_fully, from_base=from_base)}",
        f"  (0: as close as your other held-out images; 1: no closer than each class's average picture; shipped "
        f"models score 0.22-0.73 on MNIST, 0.11-0.58 on CIFAR-10 (docs/own-data.md). By class: {per_class}. From "
        f"{len(held_out.labels):,} held-out images and {result.samples:,} samples)",
        f"  the held-out images are yours too, outside the stated (ε, δ): this number is for you, not on the card; "
        f"`dpzoo evaluate {shlex.quote(str(target))} --dataset {shlex.quote(str(plan.root))} --metrics closeness "
        "--write-card` puts it there, saying so",
    ]
