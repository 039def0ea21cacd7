"""How a LightningModule declares where its privacy barrier sits (DESIGN.md, B1–B4)."""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

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
