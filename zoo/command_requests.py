"""What the small ``dpzoo`` commands are asked (``sample``, ``push``, ``list``, ``card``, ``model-cards``): each a
request whose fields declare their flags (``zoo.request_options``), as ``TrainRequest`` and ``EvaluateRequest`` do
for the two large ones. The parser is built from these fields alone, so a command's options are written once.
Torch-free."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from zoo.errors import TargetExistsError, UserError
from zoo.request_options import option

#: what ``dpzoo sample --out`` writes: a grid of images, or a table model's rows
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
ROW_SUFFIXES = (".csv", ".npy", ".png")


def refuse_existing(path: Path, flag: str, overwrite: bool) -> None:
    """Before any work: a file a command would write is never replaced unless ``--overwrite`` says so."""
    if path.exists() and not overwrite:
        raise TargetExistsError(f"{flag} {path} exists: pass --overwrite to replace it, or choose another path")


@dataclass(frozen=True)
class SampleRequest:
    """``dpzoo sample MODEL``: samples written as a picture, or a table model's rows as a file."""

    model: str = option("model id, folder, or hf-hub:org/name", positional=True)
    n: int = option("number of samples (default: 64)", 64, parse=int)
    out: str = option(
        f"a picture ({', '.join(IMAGE_SUFFIXES)}: a grid of images, or for tables a scatter/histogram); table rows "
        "also as .csv (with a header) or .npy (default: samples.png)",
        "samples.png",
    )
    seed: int = option("seed (default: 0)", 0, parse=int)
    labels: str | None = option("comma-separated class per sample (class-conditional models)", None)
    nrow: int | None = option("images per grid row (default: one per class, or 8 when unconditional)", None, parse=int)
    overwrite: bool = option("replace --out if it exists", False)
    device: str = option(
        "cpu (default), cuda, cuda:N, mps, or auto (cuda when there is one): where the model samples", "cpu"
    )

    def check(self) -> Path:
        """The file to write: a suffix ``sample`` writes, not already there unless ``--overwrite``."""
        out = Path(self.out)
        if out.suffix.lower() not in {*IMAGE_SUFFIXES, *ROW_SUFFIXES}:
            raise UserError(
                f"--out must end in {', '.join(IMAGE_SUFFIXES)} (a picture) or, for table models, "
                f"{', '.join(ROW_SUFFIXES)} (rows); got {out.suffix or 'no suffix'!r}"
            )
        refuse_existing(out, "--out", self.overwrite)
        return out


@dataclass(frozen=True)
class PushRequest:
    """``dpzoo push MODEL REPO``: the repository positional, as ``zoo.push_to_hub`` takes it."""

    model: str = option("model id or folder", positional=True)
    repo: str = option("Hub repository, org/name (as zoo.push_to_hub takes it)", positional=True)
    token: str | None = option("Hub token (default: HF_TOKEN or the saved login)", None)
    private: bool = option("create the repository as private", False)


@dataclass(frozen=True)
class ListRequest:
    """``dpzoo list``: each model's stated guarantee, or with ``--verify`` its ledger's."""

    verify: bool = option(
        "recompute each guarantee from its privacy ledger (slow) and fail if a config.json states another", False
    )


@dataclass(frozen=True)
class CardRequest:
    """``dpzoo card FOLDER``: a model folder's card written again from its config.json."""

    folder: str = option("a model folder in Hub layout", positional=True)


@dataclass(frozen=True)
class ModelCardsRequest:
    """``dpzoo model-cards``: MODEL_CARDS.md and the model index's digests, written or checked."""

    check: bool = option("only check that MODEL_CARDS.md and the digests are up to date", False)
