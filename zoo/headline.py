"""What ``dpzoo list`` shows of a model: the headline its config.json stores under ``HEADLINE_KEY`` (method,
data, guarantee numbers), computed from the ledger when the model is saved (``zoo.release.cards.headline``), so that
listing imports neither torch nor an accountant. ``zoo.load`` and ``dpzoo list --verify`` recompute it.

Only numbers are stored of the guarantee; its words come from ``stated_guarantee``, so that the words shown
cannot disagree with the numbers checked. Every field of a stored headline is checked, the method and the data
as well as the guarantee: each is shown as the model's."""

from __future__ import annotations

from typing import Any

HEADLINE_KEY = "headline"
#: what a stored headline must state exactly as config.json's ledger and method give it; ``seeded`` is absent
#: (None) from headlines stored before seeds were recorded, as from every unseeded model's
HEADLINE_KEYS = ("method", "dataset", "notion", "epsilon", "delta", "accountant", "pac", "seeded")


def stated_guarantee(headline: dict[str, Any]) -> str:
    """The guarantee in a few words, in its own notion: PAC bounds (``pac``), (ε, δ), or none (public data);
    a model trained with seeded randomness (``seeded``) states that it has none."""
    if headline.get("seeded"):
        return f"not differentially private (seeded randomness: {', '.join(headline['seeded'])}; for testing)"
    if headline["pac"]:
        return "; ".join(
            f"PAC privacy: MI ≤ {g['mi_bound_nats']:g} nats (confidence {g['confidence']:g})" for g in headline["pac"]
        )
    if headline["epsilon"] is None:
        return "none needed: public data only"
    return f"(ε = {headline['epsilon']}, δ = {headline['delta']:g})-DP"


def headline_disagreement(stored: dict[str, Any], recomputed: dict[str, Any]) -> str | None:
    """How a stored headline differs from the one recomputed from config.json's ledger and method; None if in
    nothing."""
    differing = [key for key in HEADLINE_KEYS if stored.get(key) != recomputed.get(key)]
    if not differing:
        return None
    return "; ".join(f"{key}: stored {stored.get(key)!r}, ledger gives {recomputed.get(key)!r}" for key in differing)
