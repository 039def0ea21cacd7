"""Each class's released mean shrunk toward the mean of all classes, by as much as the release's noise warrants,
before the generator is fitted to it (issue 65).

Why. Class c's column of a one-shot release is its true sum plus N(0, σ²) on each of its d coordinates. Below a
forecast signal-to-noise of about 1 that noise dominates, and the noisy column lies far outside the set of mean
embeddings any distribution of images can have. The generator's closest fit to such a point lies on the boundary
of that set, a mixture of few extreme images, so every code of a class draws the same image: the fit collapses
because of the target, not of the generator. The mean of the C class columns carries √C less noise, and shrinking
each class's deviation from it, by the share its own noise leaves credible, pulls the target back in.

The rule is the positive-part James-Stein estimator of each class's deviation (James and Stein, 1961; toward a
common mean as in Efron and Morris, 1973). For columns x_c = s_c + N(0, σ²I_d), their mean p = Σ_c x_c / C and the
deviation's known noise variance v = σ²(1 − 1/C) per coordinate:

    x̂_c = p + κ_c · (x_c − p),   κ_c = max(0, 1 − (d − 2)·v / ‖x_c − p‖²)

For d ≥ 3 its expected squared error is below that of the column itself whatever the true sums (the deviation's
own noise). κ_c ≈ 1 where the class stands clear of the noise, and 0 where its deviation is no larger than
noise: that class is fitted to the mean of all classes.

Theorem (post-processing). x̂ is a function of the released columns and of σ, d and C alone, which are public: σ
is the release's noise multiplier, set by (ε, δ) before the release, and d and C are the release's shape. So a
generator fitted to x̂ keeps the release's (ε, δ) exactly, and the shrinkage adds nothing to the ledger.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor

#: what a card says of the shrinkage, after the release it follows
CARD_WORDS = (
    ", then each class's mean shrunk toward the mean of all classes by the positive-part James-Stein rule at the "
    "release's own noise (post-processing)"
)


def card_words(arch: dict[str, Any]) -> str:
    """``CARD_WORDS`` where the model's architecture shrinks its release, else nothing (shipped configs predate it)."""
    return CARD_WORDS if arch.get("shrink_to_common", False) else ""


def shrink_to_common_mean(columns: Tensor, noise_sd: float) -> tuple[Tensor, Tensor]:
    """``columns`` (features × classes), each its class's sum plus independent N(0, ``noise_sd``²) noise on every
    coordinate, shrunk toward their mean (see the module); returns the shrunk columns and each class's κ, the share
    of its deviation from the mean it keeps (one class: nothing to shrink toward, kept whole)."""
    features, classes = columns.shape
    if classes < 2:
        return columns, columns.new_ones(classes)
    common = columns.mean(dim=1, keepdim=True)
    deviation = columns - common
    noise_variance = noise_sd**2 * (1 - 1 / classes)
    kept = (1 - (features - 2) * noise_variance / deviation.square().sum(dim=0)).clamp(min=0)
    return common + kept * deviation, kept
