"""PAC privacy (Xiao & Devadas, CRYPTO 2023): a second notion beside (ε, δ)-DP, never converted to it.

Setting. The private input X is a random subset of a data pool (each record kept with probability
``subset_rate``, drawn independently of the data); the mechanism M is deterministic given X (its seeds
are fixed and public); the release is M(X) + B with B ~ N(0, σ²·I).

Theorem (isotropic noise, Xiao & Devadas Thm 3 / P3DM Thm 3.2, with an explicit confidence). Let
Σ = Cov(M(X)) over the draw of X, and let ``‖M(X) − M(X')‖² ≤ D²`` for any two inputs. Then

    I(X; M(X) + B) ≤ ½·log det(I + Σ/σ²) ≤ tr(Σ) / (2σ²),

because among inputs of a given covariance a Gaussian one maximises the information through an
additive Gaussian channel. tr(Σ) is unknown; it equals ½·E‖M(X) − M(X')‖² for independent X, X'.
From m Monte-Carlo runs paired into K = ⌊m/2⌋ independent pairs, Zₖ = ½‖yₖ − yₖ'‖² ∈ [0, D²/2],
Hoeffding gives, with probability at least 1 − γ over the runs,

    tr(Σ) ≤ T := mean(Zₖ) + (D²/2)·√(ln(1/γ) / (2K)).

So σ² = T / (2v) makes I(X; M(X) + B) ≤ v nats with confidence 1 − γ. By P3DM's Theorem 3.1 (KL
divergence), v bounds how much any adversary's chance of reconstructing X (to the measure it cares
about) can exceed its best guess without the release: the bound is on a whole-input reconstruction,
it is not an (ε, δ) and is never composed with one.

Why isotropic: Xiao & Devadas' anisotropic noise (variance ∝ √λⱼ along each eigenvector of Σ, the
"square-root sum of eigenvalues") needs Σ's eigenvectors, which m ≪ d runs cannot identify; their own
Algorithm 1 falls back to isotropic noise (there with an unspecified universal constant, here with
Hoeffding's explicit one) when the eigenvalue gaps are not resolved. The official P3DM notebook takes
the per-pixel variance of generated images instead of the variance over input subsets, which is not
this theorem's Σ.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor
from tqdm.auto import tqdm

from zoo.privacy.errors import PrivacyConfigError

NOTION = "PAC privacy (mutual information)"


@dataclass(frozen=True)
class PACCalibration:
    """Gaussian noise for an MI bound of ``mi_bound`` nats with probability ``confidence`` over the runs."""

    noise_std: float
    mi_bound: float
    confidence: float
    mc_runs: int
    output_dim: int
    variance_estimate: float  # mean(Zₖ), the estimate of tr Σ
    variance_bound: float  # T, its upper confidence bound
    squared_diameter: float  # D²

    @property
    def mean_noise_norm(self) -> float:
        """E‖B‖ ≈ σ·√d: the "mean norm of the Gaussian noise" P3DM compares across models."""
        return self.noise_std * math.sqrt(self.output_dim)


def calibrate_isotropic_noise(
    outputs: Tensor, mi_bound: float, confidence: float, squared_diameter: float
) -> PACCalibration:
    """σ for ``outputs`` (m Monte-Carlo runs of M, one per row) by the theorem of this module."""
    if outputs.dim() != 2 or len(outputs) < 2:
        raise PrivacyConfigError(
            f"PAC calibration needs at least 2 runs as an (m, d) tensor, got {tuple(outputs.shape)}"
        )
    check_pac_settings(mi_bound, confidence, mc_runs=len(outputs))
    if not squared_diameter > 0:
        raise PrivacyConfigError(f"squared_diameter must be positive, got {squared_diameter!r}")
    pairs = len(outputs) // 2
    first, second = outputs[0 : 2 * pairs : 2].double(), outputs[1 : 2 * pairs : 2].double()
    halves = 0.5 * (first - second).square().sum(dim=1)
    if halves.max().item() > squared_diameter / 2 * (1 + 1e-9):
        raise PrivacyConfigError("two runs lie further apart than squared_diameter allows: the bound would not hold")
    estimate = halves.mean().item()
    bound = estimate + squared_diameter / 2 * math.sqrt(math.log(1 / (1 - confidence)) / (2 * pairs))
    return PACCalibration(
        noise_std=math.sqrt(bound / (2 * mi_bound)),
        mi_bound=mi_bound,
        confidence=confidence,
        mc_runs=len(outputs),
        output_dim=outputs.shape[1],
        variance_estimate=estimate,
        variance_bound=bound,
        squared_diameter=squared_diameter,
    )


def gaussian_mutual_information(covariance_eigenvalues: Tensor, noise_std: float) -> float:
    """I(Y; Y + B) in nats for Gaussian Y with these covariance eigenvalues and B ~ N(0, σ²I) (exact)."""
    return 0.5 * torch.log1p(covariance_eigenvalues.double() / noise_std**2).sum().item()


def check_pac_settings(mi_bound: float, confidence: float, mc_runs: int) -> None:
    if not (isinstance(mi_bound, (int, float)) and math.isfinite(mi_bound) and mi_bound > 0):
        raise PrivacyConfigError(f"mi_bound (nats) must be a positive number, got {mi_bound!r}")
    if not 0 < confidence < 1:
        raise PrivacyConfigError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    if isinstance(mc_runs, bool) or not isinstance(mc_runs, int) or mc_runs < 2:
        raise PrivacyConfigError(f"mc_runs must be an integer of at least 2 (runs are paired), got {mc_runs!r}")


@dataclass
class PACEntry:
    """One PAC-private release in the ledger: what the MI bound covers and how it was calibrated."""

    mechanism: str
    dataset_id: str
    dataset_size: int
    subset_rate: float
    mi_bound: float
    confidence: float
    mc_runs: int
    output_dim: int
    noise_std: float
    mean_noise_norm: float
    variance_estimate: float
    variance_bound: float
    squared_diameter: float
    #: randomness fixed by a seed ("seed=0"), as ``LedgerEntry.seeded``: the release then bounds nothing (tests only)
    seeded: list[str] = field(default_factory=list)
    note: str = ""
    created: str = field(default_factory=lambda: datetime.datetime.now(datetime.timezone.utc).isoformat())

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def pac_release(
    mechanism: Callable[[Tensor], Tensor],
    pool_size: int,
    squared_diameter: float,
    dataset_id: str,
    *,
    mi_bound: float,
    confidence: float,
    mc_runs: int,
    subset_rate: float,
    generator: torch.Generator,
    seeded: list[str] | None = None,
    note: str = "",
) -> tuple[Tensor, PACEntry]:
    """M(X) + B for a fresh subset X of the pool (each record kept at ``subset_rate``), B calibrated by the
    theorem of this module on ``mc_runs`` other subsets, and its ledger record.

    ``mechanism`` maps a boolean mask over the pool to a flat output; it must be deterministic given the mask.
    ``seeded`` names a seed ``generator`` was made from, which the record keeps."""

    def run() -> Tensor:
        mask = torch.rand(pool_size, generator=generator) < subset_rate
        return mechanism(mask).detach().flatten().cpu()

    outputs = torch.stack([run() for _ in tqdm(range(mc_runs), desc="PAC Monte-Carlo runs")])
    calibration = calibrate_isotropic_noise(outputs, mi_bound, confidence, squared_diameter)
    released = run()
    noisy = released + calibration.noise_std * torch.randn(released.shape, generator=generator)
    record = PACEntry(
        mechanism="isotropic Gaussian noise calibrated by PAC privacy (Xiao & Devadas 2023), Hoeffding confidence",
        dataset_id=dataset_id,
        dataset_size=pool_size,
        subset_rate=subset_rate,
        mean_noise_norm=calibration.mean_noise_norm,
        seeded=list(seeded or []),
        note=note,
        **dataclasses.asdict(calibration),
    )
    return noisy, record


def describe_pac(record: dict[str, Any] | PACEntry) -> str:
    """One line stating a PAC guarantee as what it is (never as ε or δ)."""
    r = record if isinstance(record, dict) else record.to_dict()
    return (
        f"PAC privacy: I(X; release) ≤ {r['mi_bound']:g} nats with confidence {r['confidence']:g} "
        f"({r['mc_runs']} Monte-Carlo runs on subsets at rate {r['subset_rate']:g}; noise σ = {r['noise_std']:.4g}, "
        f"mean noise norm {r['mean_noise_norm']:.4g})"
    )
