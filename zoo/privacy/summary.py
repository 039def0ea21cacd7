"""A model's guarantee as its config.json's ledger gives it, in the words every published surface uses: the
card's ``privacy:`` block (one guarantee per source dataset, in its own notion), and the one-line summaries
of lists and indexes. Everything is read from the ledger; the accountant named in it computes every ε."""

from __future__ import annotations

import math
from typing import Any

from zoo.headline import stated_guarantee
from zoo.privacy.accounting import describe_accountant
from zoo.privacy.ledger import PrivacyLedger, stated_epsilon
from zoo.privacy.pac import NOTION as PAC_NOTION

#: what the guarantee does not hide, as in Opacus
PUBLIC_INFORMATION = (
    "the number of training records (of each part, for models trained per class): the ledger records it, and "
    "the mechanisms normalise by it (DP-SGD divides its noisy sum by the expected batch size q·N, a released sum "
    "is divided by N)"
)
#: what the guarantee covers
COVERAGE = (
    "everything in this folder: the weights, samples, figures, config.json and this card; evaluation numbers "
    "are computed from the released model, its samples and data outside the protected records"
)


#: what a PAC guarantee is about
PAC_SUBJECT = (
    "X, the training subset drawn from the dataset (each record kept independently with the subset rate): the "
    "bound limits the information the release carries about which records were used, and so any adversary's "
    "gain in reconstructing X (P3DM Theorem 3.1). The dataset is the pool the subsets are drawn from: what the "
    "release reveals about the pool as a whole is not bounded. Nor is any one record: a bound above ln 2 ≈ 0.69 "
    "nat does not rule out revealing whether one given record was used"
)


#: the notion of a model that has seen declared-public data only
PUBLIC_NOTION = "none: trained on data declared public only"
#: the notion of a model trained with seeded randomness (``PrivacyLedger.seeded``): a test's model
SEEDED_NOTION = "none: trained with seeded randomness, for testing"
#: what the guarantee of a seeded model covers
SEEDED_COVERAGE = (
    "nothing: with its seeds known, the noise and the sampling are fixed, and the release is a deterministic "
    "function of the data"
)


def privacy_metadata(config: dict[str, Any]) -> dict[str, Any]:
    """The card's ``privacy:`` block, one guarantee per source dataset: (ε, δ)-DP, or PAC privacy, never both;
    data declared public is listed apart (``public_data``), with no guarantee. A model trained with seeded
    randomness states none (``seeded``)."""
    ledger = PrivacyLedger.from_dict(config["privacy_ledger"])
    privacy = _guarantee_metadata(config, ledger)
    return _seeded_metadata(privacy, ledger.seeded) if ledger.seeded else privacy


def _seeded_metadata(privacy: dict[str, Any], seeds: list[str]) -> dict[str, Any]:
    """The block of a seeded model: its notion is none, its seeds are named, and no ε, δ or PAC bound is stated
    (the card's ledger keeps what the noise was calibrated to)."""
    return {
        **{key: value for key, value in privacy.items() if key not in ("epsilon", "delta")},
        "notion": SEEDED_NOTION,
        "covers": SEEDED_COVERAGE,
        "seeded": seeds,
        "guarantees": [{"dataset": g["dataset"]} for g in privacy["guarantees"]],
    }


def _guarantee_metadata(config: dict[str, Any], ledger: PrivacyLedger) -> dict[str, Any]:
    """The ``privacy:`` block as the ledger's guarantees give it."""
    public = _public_data(ledger)
    if ledger.notion == "pac":
        return _pac_metadata(config, ledger)
    if ledger.notion == "public":
        return {
            "notion": PUBLIC_NOTION,
            "covers": "nothing: the model holds no private records, so no guarantee is needed or given",
            "barrier": "public",
            "released": list(config["released_modules"]),
            "guarantees": [],
            "public_data": public,
        }
    guarantees = ledger.guarantees()
    main, worst = ledger.main_entry(), max(guarantees.values(), key=lambda g: g["epsilon"])
    return {
        "notion": "(epsilon, delta)-differential privacy",
        "neighbouring_relation": "add or remove one training record",
        "public": PUBLIC_INFORMATION,
        "covers": COVERAGE,
        "epsilon": stated_epsilon(worst["epsilon"]),
        "delta": worst["delta"],
        "accountant": main.accountant,
        "accountant_description": describe_accountant(main.accountant),
        "barrier": main.barrier,
        "mechanism": main.mechanism,
        "noise_multiplier": main.noise_multiplier,
        "clip_norm": main.clip_norm,
        "sample_rate": main.sample_rate,
        "steps": main.steps,
        "released": list(config["released_modules"]),
        "guarantees": [
            {
                "dataset": root,
                "epsilon": stated_epsilon(g["epsilon"]),
                "delta": g["delta"],
                "partitions": len(g["partitions"]),
                **({"composed_with": g["composed_with"]} if g["composed_with"] else {}),
            }
            for root, g in guarantees.items()
        ],
        **({"public_data": public} if public else {}),
    }


def _public_data(ledger: PrivacyLedger) -> list[dict[str, Any]]:
    return [
        {"dataset": use.dataset_id, "records": use.records, "source": use.source, "stage": use.stage}
        for use in ledger.public_data
    ]


def _pac_metadata(config: dict[str, Any], ledger: PrivacyLedger) -> dict[str, Any]:
    """A PAC guarantee as what it is: a mutual-information bound at a confidence, with no ε or δ."""
    return {
        "notion": PAC_NOTION,
        "about": PAC_SUBJECT,
        "covers": COVERAGE,
        "barrier": "PAC",
        "mechanism": ledger.pac_releases[-1].mechanism,
        "released": list(config["released_modules"]),
        "guarantees": [
            {
                "dataset": r.dataset_id,
                "mi_bound_nats": r.mi_bound,
                "confidence": r.confidence,
                "mc_runs": r.mc_runs,
                "subset_rate": r.subset_rate,
                "subset_entropy_nats": round(r.dataset_size * _binary_entropy(r.subset_rate), 1),
                "output_dim": r.output_dim,
                "noise_std": round(r.noise_std, 6),
                "mean_noise_norm": round(r.mean_noise_norm, 4),
                "partitions": 0,
            }
            for r in ledger.pac_releases
        ],
    }


def _binary_entropy(p: float) -> float:
    return -(p * math.log(p) + (1 - p) * math.log(1 - p))


def is_pac(privacy: dict[str, Any]) -> bool:
    """Whether a ``privacy:`` block states PAC privacy (else (ε, δ)-DP, or public data only)."""
    return privacy["notion"] == PAC_NOTION


def is_public(privacy: dict[str, Any]) -> bool:
    """Whether a ``privacy:`` block belongs to a model that has seen declared-public data only."""
    return privacy["notion"] == PUBLIC_NOTION


def is_seeded(privacy: dict[str, Any]) -> bool:
    """Whether a ``privacy:`` block belongs to a model trained with seeded randomness (it states no guarantee)."""
    return privacy["notion"] == SEEDED_NOTION


def card_datasets(privacy: dict[str, Any]) -> list[str]:
    """The datasets a model saw: the protected ones, then those declared public."""
    return [g["dataset"] for g in privacy["guarantees"]] + [p["dataset"] for p in privacy.get("public_data", [])]


def datasets_line(privacy: dict[str, Any]) -> str:
    """The datasets a model saw in one line, those declared public marked as such (lists, indexes)."""
    public = [f"{p['dataset']} (public)" for p in privacy.get("public_data", [])]
    return ", ".join([g["dataset"] for g in privacy["guarantees"]] + public)


def guarantee_summary(privacy: dict[str, Any]) -> str:
    """The guarantee in a few words, stated as its own notion (lists, indexes, the CLI)."""
    return stated_guarantee(
        {
            "epsilon": privacy.get("epsilon"),
            "delta": privacy.get("delta"),
            "pac": privacy["guarantees"] if is_pac(privacy) else None,
            "seeded": privacy.get("seeded"),
        }
    )
