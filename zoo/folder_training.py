"""``dpzoo train FOLDER --method M --epsilon E``: one command for the common case.

The options are checked first (``zoo.front_checks``, which the command line runs before importing this module),
then the folder once (every problem at once, each fix a flag to paste: ``zoo.data.folder_check``; too few classes
or images per class among them),
the method's recipe chosen for its images in the open (``zoo.recipes``), and before any training a summary
says what will be used: images per class, sizes, what reading does to them, the held-out part (a folder
without ``test/`` keeps one, chosen by a hash of the file names), and an estimated time from a measured
rate (``zoo.estimate``). The plan then runs through ``dpzoo fit``'s code path (``zoo.fit.run_fit``), and
the ε spent and the card's place are printed."""

from __future__ import annotations

import inspect
import json
import shlex
import warnings
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# before opacus, whose import sets up the root logger: Lightning's lines then print as `dpzoo fit` prints them
import pytorch_lightning  # noqa: F401
from pytorch_lightning import LightningDataModule

from zoo.data.conversion import check_convert, preprocessing_sentence
from zoo.data.folder_check import (
    FolderProblems,
    PartFacts,
    check_class_folders,
    class_problems,
    common_channels,
    common_size,
    folder_problems,
    ignored_line,
    inspect_part,
)
from zoo.data.folders import IMAGE_SUFFIXES, folder_parts, hashed_below, held_out_indices, subset
from zoo.fit import run_fit, say
from zoo.front_checks import DEFAULT_DELTA, check_train, parse_duration
from zoo.methods import DPGenerativeModel, method_class
from zoo.privacy import Budget
from zoo.recipes import Choice, Problem, choose_recipe
from zoo.release.layout import CARD_NAME

#: the fraction of each class a folder without test/ keeps out of training, and the seed of its hash
HELD_OUT = 0.1
SPLIT_SEED = 0
#: the validation share an image folder keeps when the recipe reads it (ImageFolderDataModule's default)
VALIDATION = 0.1


def lightning_duration(seconds: float) -> str:
    """Seconds as Lightning's ``max_time`` takes them: DD:HH:MM:SS."""
    minutes, second = divmod(round(seconds), 60)
    hours, minute = divmod(minutes, 60)
    days, hour = divmod(hours, 24)
    return f"{days:02d}:{hour:02d}:{minute:02d}:{second:02d}"


def train_flag(name: str, value: Any) -> str:
    """An option as ``dpzoo train`` takes it (``zoo.data.folder_check`` spells fixes with it)."""
    return f"--{name.replace('_', '-')} {value}"


def train_folder(
    folder: str,
    method: str,
    epsilon: float,
    *,
    delta: float = DEFAULT_DELTA,
    out: str | None = None,
    max_steps: int | None = None,
    max_time: str | None = None,
    license: str | None = None,
    convert: str | None = None,
    channels: int | None = None,
    image_size: int | None = None,
    init_from: str | None = None,
    overwrite: bool = False,
    classes: Sequence[str] | None = None,
) -> Path:
    """Train ``method`` at (``epsilon``, ``delta``) on the image folder ``folder`` and save it in ``out``
    (default ``out/<folder>-<method>``); returns the model folder. Every bad input is refused before any work, and
    before the summary."""
    target = check_train(
        folder,
        method,
        epsilon,
        delta=delta,
        out=out,
        max_steps=max_steps,
        max_time=max_time,
        channels=channels,
        image_size=image_size,
        init_from=init_from,
        overwrite=overwrite,
    )
    check_convert(convert)
    root = Path(folder).expanduser()
    if not classes:  # a class given by --classes may hold no images: the class counts below refuse it
        check_class_folders(root, IMAGE_SUFFIXES)
    train_part, test_part = folder_parts(root, classes)
    parts = [train_part, *([test_part] if test_part else [])]
    inspected = [inspect_part(part) for part in parts]
    facts = [f for part in inspected for f in part.readable()]
    size = (image_size, image_size) if image_size else common_size(facts)
    choice = choose_recipe(method, epsilon, channels or common_channels(facts) or 3, size, image_size is not None)
    problems = folder_problems(inspected, choice.size if isinstance(choice, Choice) else None, channels, convert)
    if isinstance(choice, Problem):
        problems.append(choice)
    held_out = held_out_indices(train_part, HELD_OUT, SPLIT_SEED) if test_part is None else []
    trained = Counter(train_part.labels[i] for i in sorted(set(range(len(train_part.files))) - set(held_out)))
    conditional = "num_classes" in inspect.signature(method_class(method)).parameters
    problems += class_problems(train_part, trained, method, conditional)
    if problems:
        raise FolderProblems(problems, parts, train_flag)
    assert isinstance(choice, Choice)
    used_channels = channels or common_channels(facts)
    say(_summary(root, inspected, choice, used_channels, convert, held_out, trained))  # type: ignore[arg-type]
    argv = [
        *("--config", str(choice.recipe.path), "--images", str(root)),
        *("--data.init_args.image_size", str(list(choice.size)), "--data.init_args.channels", str(used_channels)),
        *(("--data.init_args.convert", convert) if convert else ()),
        *(("--data.init_args.classes", json.dumps(list(classes))) if classes else ()),
        *(("--data.init_args.test_fraction", str(HELD_OUT)) if test_part is None else ()),
        *(() if choice.recipe.validates else ("--data.init_args.validation_size", "0")),
        *("--privacy.init_args.target_epsilon", str(epsilon), "--privacy.init_args.delta", str(delta)),
        *(("--trainer.max_steps", str(max_steps)) if max_steps else ()),
        *(("--trainer.max_time", lightning_duration(parse_duration(max_time))) if max_time else ()),
        *("--save_pretrained", str(target), "--selection", _selection(choice)),
        *(("--license", license) if license else ()),
        *(("--init_from", init_from) if init_from else ()),
        *(("--overwrite",) if overwrite else ()),
    ]
    command = _command(root, method, epsilon, delta, max_steps, license, convert, channels, image_size, init_from)
    command += f" --classes {shlex.quote(','.join(classes))}" if classes else ""
    command += f" --max-time {shlex.quote(max_time)}" if max_time else ""
    recorded = {"config": f"configs/{choice.recipe.path.name}", "command": command}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*: ignored \d+ files? that", category=UserWarning)  # named above
        model = run_fit(argv, recorded=recorded, before_training=_before_training)
    if max_time:
        planned = max_steps or (choice.recipe.settings.get("trainer") or {}).get("max_steps")
        of_planned = f" of the {planned:,} planned" if planned else ""
        say(f"--max-time {max_time}: the last stage trained {model.trainer.global_step:,}{of_planned} steps")
    say(
        *model.privacy_ledger.summary_lines(),
        f"  ({root.resolve().name} is local:… there: this machine's name for its images, which says nothing about "
        "them to anyone else)",
        f"card: {target / CARD_NAME}",
    )
    return target


def _summary(
    root: Path,
    inspected: list[PartFacts],
    choice: Choice,
    channels: int,
    convert: str | None,
    held_out: list[int],
    trained: Counter[int],
) -> str:
    """The data as it will be used, before any work (``trained``: the training images of each class)."""
    train = inspected[0].part
    test = inspected[1].part if len(inspected) > 1 else subset(train, held_out)
    kept = Counter(test.labels)
    width = max(len("class"), *(len(name) for name in train.classes)) + 2
    layout = "train/ and test/" if len(inspected) > 1 else "one folder per class, no test/"
    lines = [
        f"{root.resolve().name}: {len(train.classes)} classes ({layout})",
        f"  {'class':<{width}}training  held out",
    ]
    lines += [f"  {name:<{width}}{trained[k]:>8,}  {kept[k]:>8,}" for k, name in enumerate(train.classes)]
    facts = [f for part in inspected for f in part.readable()]
    grey, transparent = sum(f.grey for f in facts), sum(f.transparent for f in facts)
    sizes = Counter(f.size for f in facts).most_common()
    shown = ", ".join(f"{h}×{w} ×{n:,}" for (h, w), n in sizes[:4]) + (f", {len(sizes) - 4} more" if sizes[4:] else "")
    lines.append(f"  sizes: {shown}; {len(facts) - grey:,} colour, {grey:,} grey, {transparent:,} with transparency")
    ignored = [str((p.part.root / n).relative_to(root)) for p in inspected for n in p.part.ignored]
    if ignored:
        lines.append(f"  {ignored_line(ignored)}")
    height, width_px = choice.size
    sentence = preprocessing_sentence(inspected[0].readable(), choice.size, channels, convert)
    lines.append(f"read as {channels}×{height}×{width_px}: {sentence}")
    how = (
        "the folder's test/"
        if len(inspected) > 1
        else f"each image with chance {HELD_OUT:.0%}, by a hash of its own name"
    )
    lines.append(
        f"held out for evaluation: {len(test.files):,} images ({how}): never trained on, not among "
        "the records the ledger protects; `dpzoo evaluate MODEL --dataset FOLDER` uses them"
    )
    total = sum(trained.values())
    rest = sorted(set(range(len(train.files))) - set(held_out))
    validation = len(hashed_below(train, rest, VALIDATION, SPLIT_SEED, "validation")) if choice.recipe.validates else 0
    rest = f" ({validation:,} more kept for validation, not protected)" if validation else ""
    lines.append(f"training: {total - validation:,} images{rest}")
    lines.append(f"recipe: configs/{choice.recipe.path.name}: {choice.reason}")
    return "\n".join(lines)


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


def _selection(choice: Choice) -> str:
    return (
        f"dpzoo train chose configs/{choice.recipe.path.name}: {choice.reason}. Its settings were chosen on "
        "the named dataset's validation images (see the recipe), not on this data."
    )


def _command(
    root: Path,
    method: str,
    epsilon: float,
    delta: float,
    max_steps: int | None,
    license: str | None,
    convert: str | None,
    channels: int | None,
    image_size: int | None,
    init_from: str | None,
) -> str:
    """The command as a card records it: the folder by its name, no local paths, no output folder."""
    words = ["dpzoo", "train", root.resolve().name, "--method", method, "--epsilon", f"{epsilon:g}"]
    options = {
        "--delta": None if delta == DEFAULT_DELTA else f"{delta:g}",
        "--max-steps": max_steps,
        "--convert": convert,
        "--channels": channels,
        "--image-size": image_size,
        "--init-from": Path(init_from).name if init_from and Path(init_from).exists() else init_from,
        "--license": license,
    }
    words += [str(word) for flag, value in options.items() if value is not None for word in (flag, value)]
    return shlex.join(words)
