"""How a LightningModule declares where its privacy barrier sits (DESIGN.md, B1–B4)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any

from torch import nn

from zoo.privacy.errors import PrivacyConfigError


class PrivacyBarrier(str, Enum):
    ONE_SHOT_RELEASE = "B1"  # a bounded-sensitivity statistic, noised once (DP-MERF)
    SUBSAMPLED_RELEASE = "B1'"  # a bounded-sensitivity statistic of a Poisson minibatch, noised every step (DP-Kernel)
    PRIVATE_CRITIC = "B2"  # DP-SGD on a critic/classifier that sees the data (DP-CGAN)
    SANITIZED_OUTPUT_GRADIENT = "B3"  # per-sample gradients into a tensor, clipped and noised (GS-WGAN)
    PRIVATE_MODEL = "B4"  # DP-SGD on the released model itself (DP-LFlow, DP-NF, DP²-VAE)
    PAC_NOISED_OUTPUT = "PAC"  # a mechanism's whole output noised once under PAC privacy, not DP (P3DM)


def declared_barrier(module: object) -> PrivacyBarrier:
    """The barrier a LightningModule declares in its ``privacy_barrier`` class attribute."""
    value = getattr(module, "privacy_barrier", None)
    try:
        return PrivacyBarrier(value)
    except ValueError:
        raise PrivacyConfigError(
            f"{type(module).__name__} must declare privacy_barrier as one of "
            f"{[b.value for b in PrivacyBarrier]} (see zoo.privacy.PrivacyBarrier), got {value!r}."
        ) from None


def declared_private_modules(module: object) -> Sequence[nn.Module]:
    """The modules whose gradients come from private data (B2: the critic; B4: the released model)."""
    method = getattr(module, "private_modules", None)
    if not callable(method):
        raise PrivacyConfigError(
            f"{type(module).__name__} declares a DP-SGD barrier and must define private_modules() "
            "returning the modules trained on private data."
        )
    return list(method())


def declared_public_modules(module: nn.Module) -> dict[str, nn.Module]:
    """The submodules a module declares in ``public_modules``, a mapping of submodule name to the reason it
    learns nothing from the private data beyond what the private steps release (a generator trained only
    through the private critic, a synthetic set fitted to sanitised gradients): outside ``private_modules()``,
    they may still change during a private step. The reason is for the auditor who reads the declaration."""
    owner = type(module).__name__
    declared = getattr(module, "public_modules", {})
    if not isinstance(declared, Mapping):
        raise PrivacyConfigError(
            f"{owner}.public_modules must map submodule names to the reason each learns nothing from the private "
            f"data, got {declared!r}"
        )
    found = {}
    for name, reason in declared.items():
        if not isinstance(reason, str) or not reason.strip():
            raise PrivacyConfigError(
                f"{owner}.public_modules[{name!r}] needs a reason: why the module learns nothing from the private "
                f"data beyond what the private steps release, got {reason!r}"
            )
        try:
            found[name] = module.get_submodule(name)
        except AttributeError:
            raise PrivacyConfigError(f"{owner}.public_modules names {name!r}, which is not a submodule of it") from None
    return found


def check_finetunable(model: Any) -> None:
    """Fine-tuning needs every module the barrier privatises to be in the release. ``model``: a
    ``zoo.methods.DPGenerativeModel``, whose declarations this layer reads without importing it."""
    barrier = PrivacyBarrier(model.privacy_barrier)
    if barrier in (PrivacyBarrier.ONE_SHOT_RELEASE, PrivacyBarrier.SUBSAMPLED_RELEASE):
        return  # the new data gets its own releases; the released generator is refitted from its weights
    if barrier == PrivacyBarrier.PAC_NOISED_OUTPUT:
        raise PrivacyConfigError(
            f"{model.method} releases a PAC-noised output and no trained network; there is nothing to continue "
            "training. Run its recipe on the new data (its own PAC release)."
        )
    if barrier not in (PrivacyBarrier.PRIVATE_MODEL, PrivacyBarrier.PRIVATE_CRITIC):
        raise PrivacyConfigError(
            f"{model.method} uses barrier {barrier.value}: its private step needs modules that are never released "
            f"({', '.join(model.never_released) or 'the critics'}), so a checkpoint cannot be fine-tuned privately."
        )
    released = {id(m) for name in model.released_modules for m in getattr(model, name).modules()}
    missing = [type(m).__name__ for m in model.private_modules() if id(m) not in released]
    if missing:
        raise PrivacyConfigError(
            f"{model.method} trains {missing} privately but does not release them; it cannot be fine-tuned "
            "from a checkpoint."
        )
