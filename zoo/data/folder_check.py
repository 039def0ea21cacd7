"""One pass over every file of an image folder: what each image is, which files cannot be read, and every
problem between the folder and a model, reported all at once, each with the option that fixes it.

A fix is an option name and value (``image_size``, ``channels``, ``convert``), spelled for the interface
the user types in: ``FolderProblems.render`` takes a ``Spelling`` (Python keywords by default, ``dpzoo fit``
and ``dpzoo train`` flags from their callers), or a shell command where no option helps (an unreadable file), or
advice where neither does (add images). ``dpzoo train`` also refuses a folder too small to train on
(``class_problems``: one class for a class-conditional method, fewer than ``MIN_IMAGES_PER_CLASS`` per class).
"""

from __future__ import annotations

import os
import shlex
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image
from tqdm.auto import tqdm

from zoo.data.conversion import ImageFacts, changes_aspect, counted, has_transparency, pixels
from zoo.data.folder_part import FolderPart, class_files, is_hidden
from zoo.errors import UserError

#: PIL modes whose images are grey; every other mode is read as colour
GREY_MODES = frozenset({"1", "L", "LA", "La", "I", "I;16", "I;16B", "I;16L", "I;16N", "F"})
PROGRESS_FROM = 2000
EXAMPLES = 3
#: the most duplicate groups listed one a line (more are packed into lines of about PACKED_WIDTH characters)
LISTED_APART = 10
PACKED_WIDTH = 110
#: the fewest training images ``dpzoo train`` takes for a class: with fewer, each image is a tenth or more of its
#: class, so a release that protects every image (what (ε, δ) says) leaves the class mostly noise at any useful ε,
#: and a class that small is more often a stray folder than data
MIN_IMAGES_PER_CLASS = 10

Spelling = Callable[[str, Any], str]


def python_spelling(name: str, value: Any) -> str:
    return f"{name}={value!r}"


class ImageFolderError(UserError):
    """An image folder that cannot be used as it is (the message says what to change)."""


@dataclass(frozen=True)
class Fix:
    """Options that fix a problem (``what``: their effect in a few words), or a shell command."""

    options: tuple[tuple[str, Any], ...] = ()
    what: str = ""
    command: str = ""

    def render(self, spell: Spelling) -> str:
        text = self.command or " ".join(spell(name, value) for name, value in self.options)
        if not text:  # advice no option or command gives (add images)
            return self.what
        return f"`{text}`" + (f" ({self.what})" if self.what else "")


@dataclass(frozen=True)
class Problem:
    """What stands in the way, and its fixes (alternatives, the first one suggested)."""

    text: str
    fixes: tuple[Fix, ...]


class FolderProblems(ImageFolderError):
    """Every problem of a folder (its ``parts``) at once; ``render`` spells the fixes for the interface in use."""

    def __init__(
        self, problems: Sequence[Problem], parts: Sequence[FolderPart], spelling: Spelling = python_spelling
    ) -> None:
        self.problems, self.parts, self.root = tuple(problems), tuple(parts), common_root(parts)
        self.ignored = ignored_names(parts, self.root)
        super().__init__(self.render(spelling))

    def render(self, spell: Spelling) -> str:
        lines = [f"{shown_root(self.parts)} cannot be used as it is ({len(self.problems)} to fix, all listed):"]
        for problem in self.problems:
            lines.append(f"  - {problem.text}: {' or '.join(fix.render(spell) for fix in problem.fixes)}")
        suggested = [problem.fixes[0] for problem in self.problems]
        options = dict(option for fix in suggested for option in fix.options)
        commands = [fix.command for fix in suggested if fix.command]
        if options and len(self.problems) > 1:
            lines.append(f"all at once: {' '.join(spell(name, value) for name, value in options.items())}")
        if commands and options:
            lines.append(f"and first: {'; '.join(commands)}")
        if self.ignored:
            lines.append(ignored_line(self.ignored))
        return "\n".join(lines)


def common_root(parts: Sequence[FolderPart]) -> Path:
    """The folder the parts lie in (``root`` of ``root/train`` and ``root/test``)."""
    return Path(os.path.commonpath([p.root for p in parts]))


def shown_root(parts: Sequence[FolderPart]) -> Path:
    """The data the parts were read from, as the user gave it: the table or saved dataset whose rows they are, else
    the folder they lie in."""
    sources = {part.source for part in parts}
    return sources.pop() if len(sources) == 1 and None not in sources else common_root(parts)  # type: ignore[return-value]


def ignored_names(parts: Sequence[FolderPart], root: Path) -> tuple[str, ...]:
    """What the parts ignored, relative to ``root`` (the folder of ``root/train`` and ``root/test``); a folder keeps
    its trailing ``/``."""
    return tuple(
        str((part.root / name).relative_to(root)) + "/" * name.endswith("/") for part in parts for name in part.ignored
    )


def ignored_line(names: Sequence[str]) -> str:
    """The files that are not images, and the hidden folders not entered (named with a trailing ``/``)."""
    files = [name for name in names if not name.endswith("/")]
    folders = [name for name in names if name.endswith("/")]
    said = []
    if files:
        what = "is not an image" if len(files) == 1 else "are not images"
        said.append(f"{_count(len(files), 'file')} that {what}: {', '.join(files)}")
    if folders:
        holds = "with what it holds" if len(folders) == 1 else "with what they hold"
        said.append(f"{_count(len(folders), 'hidden folder')}, {holds}: {', '.join(folders)}")
    return "ignored " + "; and ".join(said)


def duplicates_lines(part: FolderPart, groups: Sequence[Sequence[int]], root: Path) -> list[str]:
    """Every group of the part's files that hold the same image (``groups`` of indices, each in class and file
    order), named relative to ``root``: a sentence, then one group a line, or many packed into few lines."""
    files = sum(len(group) for group in groups)
    verb = "appears" if len(groups) == 1 else "appear"
    head = (
        f"{_count(len(groups), 'image')} {verb} in more than one file ({files:,} files): each distinct image is one "
        "record, trained once as its first file in class and file order (to keep another, remove the others):"
    )
    entries = [_group_text(part, group, root) for group in groups]
    return [head, *(entries if len(entries) <= LISTED_APART else _packed(entries, PACKED_WIDTH))]


def _group_text(part: FolderPart, group: Sequence[int], root: Path) -> str:
    """``a.png = b.png``, and the class the first file gives the image where its files are in several classes."""
    text = " = ".join(_name(part.files[i], root) for i in group)
    labels = {part.labels[i] for i in group}
    return text + (f" (trained as {part.classes[part.labels[group[0]]]})" if len(labels) > 1 else "")


def _packed(entries: Sequence[str], width: int) -> list[str]:
    """``entries`` joined by ``; `` into lines of about ``width`` characters, none split."""
    lines: list[str] = []
    for entry in entries:
        if lines and len(lines[-1]) + 2 + len(entry) <= width:
            lines[-1] += f"; {entry}"
        else:
            lines.append(entry)
    return lines


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'s' * (n != 1)}"


@dataclass(frozen=True)
class PartFacts:
    """Every file of a part read once: its facts, or why it cannot be read (None, and ``unreadable``)."""

    part: FolderPart
    images: tuple[ImageFacts | None, ...]
    unreadable: tuple[tuple[Path, str], ...]

    def readable(self) -> list[ImageFacts]:
        return [facts for facts in self.images if facts is not None]


#: parts inspected in this process, the latest few (a folder is checked before its summary and its decoding)
_INSPECTED: dict[str, PartFacts] = {}
KEPT_INSPECTIONS = 8


def inspect_part(part: FolderPart) -> PartFacts:
    """Open and decode every file once (a truncated file fails here, not in training); kept for the
    process while no file changes."""
    key = part.cache_key(None, None)
    if key not in _INSPECTED:
        facts, unreadable = [], []
        quiet = True if len(part.files) < PROGRESS_FROM else None  # None: no bar when stderr is not a terminal
        for file in tqdm(part.files, desc=f"checking {part.root}", unit="image", disable=quiet, leave=False):
            try:
                facts.append(_facts(file))
            except (OSError, SyntaxError, ValueError) as error:  # PIL's UnidentifiedImageError is an OSError
                facts.append(None)
                unreadable.append((file, str(error).split(" '")[0] or type(error).__name__))
        while len(_INSPECTED) >= KEPT_INSPECTIONS:
            _INSPECTED.pop(next(iter(_INSPECTED)))
        _INSPECTED[key] = PartFacts(part, tuple(facts), tuple(unreadable))
    return _INSPECTED[key]


def _facts(file: Path) -> ImageFacts:
    with Image.open(file) as image:
        facts = ImageFacts((image.height, image.width), image.mode in GREY_MODES, has_transparency(image))
        image.draft(image.mode, (1, 1))  # JPEG: decode at the smallest scale, enough to find a truncated file
        image.load()
    return facts


def common_size(facts: Sequence[ImageFacts]) -> tuple[int, int] | None:
    sizes = {f.size for f in facts}
    return sizes.pop() if len(sizes) == 1 else None


def common_channels(facts: Sequence[ImageFacts]) -> int | None:
    """1 when all are grey, 3 when all are colour, None when they mix."""
    grey = {f.grey for f in facts}
    return None if len(grey) != 1 else (1 if grey.pop() else 3)


def folder_problems(
    inspected: Sequence[PartFacts],
    size: tuple[int, int] | None,
    channels: int | None,
    convert: str | None,
    suggested_size: int | None = None,
) -> list[Problem]:
    """Everything that keeps the parts from being read at ``size`` and ``channels`` under ``convert``
    (``zoo.data.conversion``): unreadable files, sizes that differ with no size given, images that would be
    stretched or lose their transparency, grey mixed with colour. ``suggested_size`` is the side a fix
    proposes (default: the smallest side, so that nothing is enlarged)."""
    root = common_root([facts.part for facts in inspected])
    pairs = [(file, f) for facts in inspected for file, f in zip(facts.part.files, facts.images, strict=True) if f]
    problems = []
    unreadable = [(file, reason) for facts in inspected for file, reason in facts.unreadable]
    if unreadable:
        named = ", ".join(f"{_name(file, root)} ({reason})" for file, reason in unreadable)
        remove = Fix(command="rm -- " + " ".join(shlex.quote(str(file)) for file, _ in unreadable), what="remove")
        problems.append(Problem(f"{_count(len(unreadable), 'unreadable file')}: {named}", (remove,)))
    if not pairs:
        return problems
    side = suggested_size or min(min(f.size) for _, f in pairs)
    target = size or common_size([f for _, f in pairs])
    if target is None:
        problems.append(
            Problem(
                f"images differ in size: {_tally(f.size for _, f in pairs)}",
                (Fix((("image_size", side),), f"resize all to {side}×{side}"),),
            )
        )
    stretched = [(file, f) for file, f in pairs if changes_aspect(f.size, target or (side, side))]
    if stretched and convert is None:
        shape = pixels(target) if target else "a square"
        problems.append(
            Problem(
                f"{counted(len(stretched), 'image', has=True)} another aspect ratio than {shape} and would be "
                f"stretched ({_tally(f.size for _, f in stretched)})",
                (
                    Fix((("convert", "crop"),), "centre crop"),
                    Fix((("convert", "pad"),), "pad with white"),
                    Fix((("convert", "stretch"),), "change their aspect ratio"),
                ),
            )
        )
    transparent = [file for file, f in pairs if f.transparent]
    if transparent and convert is None:
        problems.append(
            Problem(
                f"{counted(len(transparent), 'image', has=True)} transparency, which would be dropped "
                f"({_examples(transparent, root)})",
                (Fix((("convert", "crop"),), "composite them on white"),),
            )
        )
    grey = [file for file, f in pairs if f.grey]
    if grey and len(grey) < len(pairs) and channels is None:
        problems.append(
            Problem(
                f"grey and colour images mix: {len(grey):,} grey ({_examples(grey, root)}), "
                f"{len(pairs) - len(grey):,} colour",
                (Fix((("channels", 3),), "read all as RGB"), Fix((("channels", 1),), "read all as grey")),
            )
        )
    return problems


def check_class_folders(root: Path, suffixes: Collection[str]) -> None:
    """Refuse, in one error, every class folder of ``root`` (its ``train/`` and ``test/`` when it has both) that holds
    no image file (``suffixes``), in its sub-folders neither: the reader (``zoo.data.folders``) stops at the first."""
    empty = [folder for part in _parts(root) for folder in _class_folders(part) if not _image_names(folder, suffixes)]
    if not empty:
        return
    names = ", ".join(_name(folder, root) for folder in empty)
    raise ImageFolderError(
        f"{root}: {_count(len(empty), 'class folder')} {'hold' if len(empty) > 1 else 'holds'} no images "
        f"({', '.join(suffixes)}): {names}; remove them or add images"
    )


def one_class_problem(name: str, method: str) -> Problem:
    """A folder of one class, for a class-conditional ``method``."""
    return Problem(
        f"one class ({name}): {method} is class-conditional and needs at least 2",
        (Fix(what="add a folder per class"), Fix(what="train an unconditional method such as dp-lflow")),
    )


def class_folder_names(root: Path) -> list[str]:
    """The class folders of ``root``'s training part (its ``train/`` when it has ``train/`` and ``test/``), by name."""
    return [folder.name for folder in _class_folders(_parts(root)[0])]


def header_sizes(root: Path, suffixes: Collection[str]) -> Counter[tuple[int, int]]:
    """How many images of ``root``'s training part have each (height, width), as each file's header states it: no
    pixel is decoded, so a folder of hundreds answers in a fraction of a second. A file whose header cannot be read
    is left to the folder's report."""
    sizes: Counter[tuple[int, int]] = Counter()
    for folder in _class_folders(_parts(root)[0]):
        for name in _image_names(folder, suffixes):
            try:
                with Image.open(folder / name) as image:
                    sizes[(image.height, image.width)] += 1
            except (OSError, ValueError):
                continue
    return sizes


def _parts(root: Path) -> list[Path]:
    """``root``'s ``train/`` and ``test/`` when it has both, else ``root`` itself (one folder per class)."""
    return [root / "train", root / "test"] if (root / "train").is_dir() and (root / "test").is_dir() else [root]


def _class_folders(part: Path) -> list[Path]:
    """The class folders of a part, sorted; hidden ones left out, as the reader leaves them."""
    return sorted(Path(entry.path) for entry in os.scandir(part) if entry.is_dir() and not is_hidden(entry.name))


def _image_names(folder: Path, suffixes: Collection[str]) -> list[str]:
    """The image files under a class folder (``class_files``), by their suffixes; hidden files left out."""
    names = class_files(folder)[0]
    return [name for name in names if not is_hidden(Path(name).name) and Path(name).suffix.lower() in suffixes]


def class_problems(part: FolderPart, trained: Counter[int], method: str, conditional: bool) -> list[Problem]:
    """A folder too small to train ``method`` on: one class where it is class-conditional, and every class with
    fewer than ``MIN_IMAGES_PER_CLASS`` training images (``trained``: the count of each label that trains)."""
    problems = []
    if conditional and len(part.classes) < 2:
        problems.append(one_class_problem(part.classes[0], method))
    few = [f"{name} {trained[k]}" for k, name in enumerate(part.classes) if trained[k] < MIN_IMAGES_PER_CLASS]
    if few:
        classes = f"{len(few)} class{'es' * (len(few) > 1)}"
        problems.append(
            Problem(
                f"{classes} with fewer than {MIN_IMAGES_PER_CLASS} training images ({', '.join(few)}): each image "
                "would be a tenth or more of its class, which a private model of it leaves mostly noise",
                (Fix(what="add images"), Fix(what="move those class folders out (or leave them out of --classes)")),
            )
        )
    return problems


def _name(file: Path, root: Path) -> str:
    return str(file.relative_to(root)) if file.is_relative_to(root) else str(file)


def _examples(files: Sequence[Path], root: Path) -> str:
    more = f", … {len(files) - EXAMPLES:,} more" if len(files) > EXAMPLES else ""
    return "e.g. " * (len(files) > 1) + ", ".join(_name(file, root) for file in files[:EXAMPLES]) + more


def _tally(sizes: Any) -> str:
    """Sizes (width × height) with their counts, the commonest first: ``32×32 ×1,585, 40×28 ×300, …``."""
    counts = Counter(sizes).most_common()
    shown = ", ".join(f"{pixels(size)} ×{n:,}" for size, n in counts[:4])
    return shown + (f" and {len(counts) - 4} more sizes" if len(counts) > 4 else "")
