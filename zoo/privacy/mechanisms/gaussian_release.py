"""B1: release a bounded-sensitivity statistic once with the Gaussian mechanism.

Theorem (add/remove-one neighbouring datasets). If adding or removing one record moves the
statistic f by at most Δ₂ in L2 norm, then f(D) + N(0, (σΔ₂)²·I) is the Gaussian mechanism
with noise multiplier σ; its (ε, δ) is what the accountant gives for one step of
(σ, sampling rate 1). The caller states Δ₂ (and the argument for it, in its docstring); the
ledger entry records Δ₂ as ``clip_norm`` and σ, so an auditor can recompute ε.
"""

from __future__ import annotations

import torch
from torch import Tensor

from zoo.privacy.accounting import History, calibrate_noise_multiplier
from zoo.privacy.barriers import PrivacyBarrier
from zoo.privacy.ledger import LedgerEntry, PrivacyLedger
from zoo.privacy.parameters import check_accountant, check_delta, check_epsilon, check_exactly_one, check_positive
from zoo.privacy.precision import noise_dtype
from zoo.privacy.randomness import private_generator
from zoo.privacy.validation import warn_if_delta_too_large


def scale_rows_to_unit_ball(rows: Tensor, bound: float) -> Tensor:
    """``rows / max(‖row‖, bound)``: every row ends with L2 norm ≤ 1, rows within ``bound`` are
    only rescaled by 1/bound, so statistics of the result have a sensitivity free of the data."""
    return rows / rows.norm(dim=1, keepdim=True).clamp(min=bound)


def clip_rows(rows: Tensor, bound: float) -> Tensor:
    """``rows · min(1, bound/‖row‖)``: every row ends with L2 norm ≤ ``bound``; rows within it are unchanged."""
    return rows * (bound / rows.norm(dim=1, keepdim=True)).clamp(max=1.0)


def gaussian_release(
    statistic: Tensor,
    l2_sensitivity: float,
    *,
    delta: float,
    dataset_id: str,
    dataset_size: int,
    target_epsilon: float | None = None,
    noise_multiplier: float | None = None,
    accountant: str = "prv",
    ledger: PrivacyLedger | None = None,
    generator: torch.Generator | None = None,
    partition_of: str | None = None,
    records_identity: str | None = None,
    seeded: list[str] | None = None,
    note: str = "",
) -> tuple[Tensor, LedgerEntry]:
    """Return ``statistic + N(0, (σ·Δ₂)²)`` and the ledger entry that accounts for it.

    ``l2_sensitivity`` is the largest change of the statistic when one example is added
    or removed; σ is calibrated from ``target_epsilon`` unless given, composed with what
    ``ledger`` already holds for ``dataset_id`` (whose records ``records_identity`` names) and for the data the
    ledger composes with it (``PrivacyLedger.calibration_target``), so that the card's ε is the target. The
    entry is appended to ``ledger`` when one is passed. Without a ``generator`` the noise comes
    from OS entropy; a seeded one is named in ``seeded`` (``"noise_seed=0"``), which the entry records.
    """
    check_exactly_one(target_epsilon, noise_multiplier)
    delta = check_delta(delta)
    check_accountant(accountant)
    l2_sensitivity = check_positive(l2_sensitivity, "l2_sensitivity")
    warn_if_delta_too_large(delta, dataset_size)
    if noise_multiplier is None:
        target: float = check_epsilon(target_epsilon)  # type: ignore[arg-type]
        prior: History = []
        if ledger is not None:
            target, prior = ledger.calibration_target(target, dataset_id, records_identity, partition_of)
        sigma = calibrate_noise_multiplier(target, delta, 1.0, 1, accountant, prior)
    else:
        sigma = check_positive(noise_multiplier, "noise_multiplier")
    generator = generator or private_generator()
    statistic = statistic.to(noise_dtype(statistic.dtype))
    noise = torch.randn(statistic.shape, generator=generator, dtype=statistic.dtype).to(statistic.device)
    entry = LedgerEntry(
        mechanism="gaussian",
        barrier=PrivacyBarrier.ONE_SHOT_RELEASE.value,
        dataset_id=dataset_id,
        dataset_size=dataset_size,
        noise_multiplier=sigma,
        clip_norm=l2_sensitivity,
        sample_rate=1.0,
        delta=delta,
        accountant=accountant,
        steps=1,
        target_epsilon=target_epsilon,
        partition_of=partition_of,
        records_identity=records_identity,
        seeded=list(seeded or []),
        note=note,
    )
    if ledger is not None:
        ledger.append(entry)
    return statistic + sigma * l2_sensitivity * noise, entry
