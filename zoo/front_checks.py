"""The checks of what a user gives that need no torch, so that ``dpzoo train``, ``sample`` and ``evaluate`` answer
a bad value in seconds: the command line runs them before it imports torch and Lightning, whose import alone takes
a minute or more on a loaded machine. ``zoo.folder_training.train_folder`` runs the same checks for Python callers.

Only the standard library and the light parts of ``zoo.release`` (a model's config.json, its id, the output
folder) are imported here."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from zoo.data.conversion import pixels
from zoo.data.folder_check import check_class_folders, class_folder_names, header_sizes, one_class_problem
from zoo.data.folder_part import IMAGE_SUFFIXES
from zoo.data.sources import FOLDER, check_local
from zoo.errors import UnknownModelError, UserError
from zoo.privacy.parameters import DEFAULT_DELTA, check_delta, check_epsilon
from zoo.public_bases import base_image_shape, base_shape_problems
from zoo.recipes import RECIPES, method_recipes, recipe_files
from zoo.release.save_target import check_save_target
from zoo.release_shapes import SHARED_PART_METHODS, SHRINKING_METHODS, shape_names

#: the prefix of a dataset id the local record index names (a user's folder), never a dataset evaluate knows by name
LOCAL_PREFIX = "local:"


def check_budget(epsilon: Any, delta: Any) -> None:
    """ε finite and positive, δ in (0, 1): the budget's own checks (``zoo.privacy.parameters``), in the flags'
    words."""
    check_epsilon(epsilon, "--epsilon")
    check_delta(delta, "--delta")


def parse_duration(text: str) -> float:
    """``--max-time``: ``90s``, ``10m``, ``2h`` or ``1h30m``, in seconds."""
    parts = re.fullmatch(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?", text.strip())
    if not text.strip() or parts is None:
        raise UserError(f"--max-time is a duration such as 90s, 10m, 2h or 1h30m, got {text!r}")
    hours, minutes, seconds = (float(value or 0) for value in parts.groups())
    total = 3600 * hours + 60 * minutes + seconds
    if total < 1:
        raise UserError(f"--max-time must be at least 1 second, got {text!r}")
    return total


def check_positive(flag: str, value: Any) -> None:
    """``value`` is None (not given) or an integer of at least 1."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise UserError(f"{flag} must be a positive integer, got {value!r}")


def image_methods() -> list[str] | None:
    """The methods ``dpzoo train`` has recipes for, by the recipes' file names; None without the recipes folder
    (an installed wheel: the recipe choice then says where they are)."""
    if not RECIPES.is_dir():
        return None
    return sorted({recipe.method for recipe in recipe_files()})


def check_image_method(method: str) -> None:
    """``method`` is one ``dpzoo train`` has an image recipe for; a typo gets the nearest names."""
    methods = image_methods()
    if methods is None or method in methods:
        return
    similar = difflib.get_close_matches(method, methods, n=2, cutoff=0.7)
    meant = f" (did you mean {' or '.join(similar)}?)" if similar else ""
    raise UnknownModelError(
        f"--method {method}{meant}: dpzoo train trains the image methods with recipes in {RECIPES}: "
        f"{', '.join(methods)}"
    )


def default_out(folder: str | Path, method: str) -> Path:
    """Where ``dpzoo train`` saves the model unless ``--out`` says: ``out/<folder's name>-<method>`` (a table's name
    without its suffix)."""
    data = Path(folder).expanduser().resolve()
    return Path("out") / f"{data.stem if data.is_file() else data.name}-{method}"


def check_train(
    folder: str,
    method: str,
    epsilon: float,
    *,
    delta: float = DEFAULT_DELTA,
    out: str | None = None,
    max_steps: int | None = None,
    max_time: str | None = None,
    channels: int | None = None,
    image_size: int | None = None,
    init_from: str | None = None,
    overwrite: bool = False,
    classes: Sequence[str] | None = None,
    release_size: str | None = None,
    shared_part: float | None = None,
    no_shrink: bool = False,
    image_column: str | None = None,
    label_column: str | None = None,
) -> Path:
    """Every option of ``dpzoo train`` that can be checked without reading an image, before any work; returns the
    folder the model will be saved in (``zoo.release.save_target``: new, empty, or a model's with ``overwrite``)."""
    check_budget(epsilon, delta)
    check_positive("--max-steps", max_steps)
    if max_time is not None:
        parse_duration(max_time)
    check_positive("--image-size", image_size)
    if channels not in (None, 1, 3):
        raise UserError(f"--channels must be 1 (grey) or 3 (RGB), got {channels!r}")
    check_image_method(method)
    check_release_size(method, release_size)
    check_shared_part(method, shared_part)
    if no_shrink and method not in SHRINKING_METHODS:
        raise UserError(f"--no-shrink applies to {', '.join(SHRINKING_METHODS)}, not to {method}")
    root = Path(folder).expanduser()
    is_folder = check_local(root, image_column, label_column).name == FOLDER
    if init_from:
        check_base_shape(root, init_from, image_size, channels, is_folder)
    target = check_save_target(Path(out) if out else default_out(root, method), overwrite)
    if is_folder and not classes:  # a class given by --classes may hold no images: the class counts refuse it
        check_class_folders(root, IMAGE_SUFFIXES)
    if is_folder:
        check_class_count(root, method, classes)
    return target


def check_base_shape(
    root: Path, init_from: str, image_size: int | None, channels: int | None, is_folder: bool = True
) -> None:
    """The base (``--init-from``, resolved) against the images, from its config.json before a pixel is read: against
    the ``--image-size`` and ``--channels`` given, else against the one size every image's header states, which a
    base fitted at another size cannot draw (the recipe's own size, where the images' sizes differ, and the sizes of
    a table's or dataset's images are checked once they are read: ``zoo.folder_training.plan_folder``)."""
    _, height, width = base_image_shape(init_from)  # an unknown id is refused here
    if image_size is None and channels is None:
        if not is_folder:
            return
        sizes = header_sizes(root, IMAGE_SUFFIXES)
        if len(sizes) != 1 or set(sizes) & {(height, width), (width, height)}:  # (a rotated photo's header)
            return
        fix = f"pass --image-size {height} (read them at its size) or " if height == width else ""
        raise UserError(
            f"the images are {pixels(next(iter(sizes)))}, but the base {Path(init_from).name} was fitted to "
            f"{pixels((height, width))} images: {fix}train without --init-from"
        )
    size = (image_size, image_size) if image_size else (height, width)
    for problem in base_shape_problems(init_from, size, channels):
        flags = " ".join(f"--{name.replace('_', '-')} {value}" for name, value in problem.fixes[0].options)
        raise UserError(f"{problem.text}: {f'pass {flags} or ' if flags else ''}train without --init-from")


def check_class_count(root: Path, method: str, classes: Sequence[str] | None) -> None:
    """A class-conditional method needs two classes: a folder of one class folder is refused before an image is
    read. A method is class-conditional unless its recipes train one model per class (``per_class:``), which the
    recipes' test holds to (``tests/zoo/test_recipes.py``). With ``--classes`` the folder's own report says it, among
    the other problems of the classes given (``zoo.folder_training.plan_folder``)."""
    if classes:
        return
    names = class_folder_names(root)
    if len(names) != 1 or trains_per_class(method):
        return
    problem = one_class_problem(names[0], method)
    raise UserError(f"{root}: {problem.text}: {' or '.join(fix.what for fix in problem.fixes)}")


def trains_per_class(method: str) -> bool:
    """Whether ``method``'s image recipes train one model per class (read from the recipe files, without torch)."""
    return any("per_class" in recipe.settings for recipe in method_recipes(method))


def check_release_size(method: str, release_size: str | None) -> None:
    """``--release-size`` names one of the method's release shapes (``zoo.release_shapes``)."""
    names = shape_names(method)
    if release_size is None or release_size in names:
        return
    if not names:
        raise UserError(f"--release-size applies to a mean-embedding release (dp-mepf, dp-merf), not to {method}")
    raise UserError(f"--release-size for {method} is one of {', '.join(names)}, got {release_size!r}")


def check_shared_part(method: str, shared_part: float | None) -> None:
    """``--shared-part`` is a weight above 0 and below 1, for a method whose release can hold the part."""
    if shared_part is None:
        return
    if method not in SHARED_PART_METHODS:
        raise UserError(f"--shared-part applies to {', '.join(SHARED_PART_METHODS)}, not to {method}")
    if not 0 < shared_part < 1:
        raise UserError(
            f"--shared-part is the shared part's weight in each image's term, above 0 and below 1 (e.g. 0.5), got "
            f"{shared_part:g}"
        )


def parse_labels(text: str) -> list[int]:
    """``--labels 3,3,7``: one class index per sample."""
    try:
        return [int(v) for v in text.split(",")]
    except ValueError:
        raise UserError(f"--labels must be comma-separated class indices (3,3,7), got {text!r}") from None


def check_labels(labels: list[int] | None, n: int, config: dict[str, Any]) -> None:
    """``--labels`` against the model's classes as its config.json names them, before its weights are read; a model
    whose config.json names no class count is checked by the model itself."""
    check_positive("--n", n)
    if labels is None:
        return
    if len(labels) != n:
        raise UserError(f"--labels gives {len(labels)} labels for --n {n}: give one label per sample")
    for label in labels:
        check_label(label, config, "--labels")


def check_label(label: int | None, config: dict[str, Any], flag: str = "--label") -> None:
    """A class index within the model's classes (config.json's ``architecture.num_classes``, where it names one)."""
    classes = config["architecture"].get("num_classes")
    if label is None or not isinstance(classes, int):
        return
    if not 0 <= label < classes:
        raise UserError(f"{flag} must lie in 0..{classes - 1} (the model's {classes} classes), got {label}")


def own_dataset(config: dict[str, Any], model: str) -> str:
    """The named dataset ``model`` was trained on (its ledger's private dataset ids, as ``mnist/train[...]``):
    ``dpzoo evaluate``'s default ``--dataset``. A model trained on a folder, or on none or several, needs it given."""
    ledger = config["privacy_ledger"]
    ids = sorted({use["dataset_id"] for use in [*ledger["entries"], *ledger.get("pac_releases", [])]})
    names = {dataset_id.split("/")[0] for dataset_id in ids}
    if len(names) == 1 and not ids[0].startswith(LOCAL_PREFIX):
        return names.pop()
    folder = (config.get("data") or {}).get("name")
    if folder:
        trained = f"was trained on the image folder {folder!r}"
    elif ids:
        trained = f"was trained on data dpzoo knows by no name ({' and '.join(ids)})"
    else:
        trained = "was trained on public data only"
    raise UserError(
        f"--dataset is needed: {model} {trained}; pass --dataset with the image folder to compare with (its test/ "
        "part, or the held-out part the model recorded, is evaluated) or a named dataset"
    )
