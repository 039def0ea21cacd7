"""The privacy ledger: what was spent, by which mechanism, on which data.

It travels in every Lightning checkpoint, in ``config.json`` and in the model card;
resuming continues it and fine-tuning appends to it, so ε is never reset silently.
"""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from zoo.privacy.accounting import History, epsilon_spent
from zoo.privacy.pac import PACEntry

LEDGER_FORMAT = 1
_VERSIONED_PACKAGES = ("dpzoo", "torch", "opacus", "pytorch-lightning")


def library_versions() -> dict[str, str]:
    versions = {}
    for package in _VERSIONED_PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions


@dataclass
class LedgerEntry:
    """One private use of one dataset (a training run, a fine-tune, a one-shot release).

    ``steps`` subsampled-Gaussian mechanisms with noise multiplier ``noise_multiplier`` (the
    noise std over the mechanism's L2 sensitivity) and sampling rate ``sample_rate`` are
    composed for this entry: DP-SGD steps (B2/B4), sanitised generator steps (B3), or one
    release (B1, sampling rate 1). ``parameters`` holds what the sensitivity argument rests
    on when it is not just ``clip_norm`` (B3: rows per step and the per-row noise).
    """

    mechanism: str
    barrier: str
    dataset_id: str
    dataset_size: int
    noise_multiplier: float
    clip_norm: float
    sample_rate: float
    delta: float
    accountant: str
    steps: int = 0
    target_epsilon: float | None = None
    partition_of: str | None = None
    per_example_gradients: str | None = None
    note: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    library_versions: dict[str, str] = field(default_factory=library_versions)
    created: str = field(default_factory=lambda: datetime.datetime.now(datetime.timezone.utc).isoformat())

    def history(self) -> History:
        return [(self.noise_multiplier, self.sample_rate, self.steps)]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LedgerEntry:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown privacy ledger fields {sorted(unknown)}; was it written by a newer dpzoo?")
        return cls(**data)


@dataclass
class PublicDataUse:
    """Data the user declared public (``zoo.data.PublicData``), used without noise: the ledger names it by
    its dataset id (for image folders a fingerprint of their content) and charges it no (ε, δ). It carries
    no guarantee, and the declaration is the user's: ``source`` is their statement of why it is public."""

    dataset_id: str
    records: int
    source: str
    stage: str
    created: str = field(default_factory=lambda: datetime.datetime.now(datetime.timezone.utc).isoformat())

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class PrivacyLedger:
    """DP entries (composed into (ε, δ) per dataset) and PAC-private releases (``zoo.privacy.pac``), kept
    apart: the two notions are never converted into each other or summed."""

    entries: list[LedgerEntry] = field(default_factory=list)
    pac_releases: list[PACEntry] = field(default_factory=list)
    public_data: list[PublicDataUse] = field(default_factory=list)

    def append(self, entry: LedgerEntry) -> LedgerEntry:
        self.entries.append(entry)
        return entry

    def history(self, dataset_id: str, exclude: LedgerEntry | None = None) -> History:
        """All mechanisms that touched ``dataset_id`` (but ``exclude``), composed sequentially."""
        return [h for e in self.entries if e.dataset_id == dataset_id and e is not exclude for h in e.history()]

    def epsilon(self, dataset_id: str, delta: float | None = None, accountant: str | None = None) -> float:
        """ε spent on ``dataset_id`` (δ and accountant default to those of its latest entry)."""
        latest = [e for e in self.entries if e.dataset_id == dataset_id]
        if not latest:
            raise KeyError(f"the ledger has no entry for dataset {dataset_id!r}")
        delta = latest[-1].delta if delta is None else delta
        accountant = latest[-1].accountant if accountant is None else accountant
        return epsilon_spent(self.history(dataset_id), delta, accountant)

    def guarantees(self) -> dict[str, dict[str, Any]]:
        """(ε, δ) per source dataset.

        Entries on one dataset id compose sequentially through the accountant. Disjoint
        partitions of one dataset (``partition_of``) compose in parallel: (max ε, max δ).
        Whole-dataset entries and the partitions then compose by basic composition: ε and δ add.
        """
        roots: dict[str, dict[str, Any]] = {}
        for dataset_id in dict.fromkeys(e.dataset_id for e in self.entries):
            entries = [e for e in self.entries if e.dataset_id == dataset_id]
            root = entries[0].partition_of or dataset_id
            summary = roots.setdefault(
                root, {"whole": (0.0, 0.0), "partitions": {}, "partition_deltas": [0.0], "accountants": set()}
            )
            epsilon, delta = self.epsilon(dataset_id), entries[-1].delta
            if entries[0].partition_of:
                summary["partitions"][dataset_id] = epsilon
                summary["partition_deltas"].append(delta)
            else:
                summary["whole"] = (epsilon, delta)
            summary["accountants"].update(e.accountant for e in entries)
        return {
            root: {
                "epsilon": s["whole"][0] + max(s["partitions"].values(), default=0.0),
                "delta": s["whole"][1] + max(s["partition_deltas"]),
                "accountants": sorted(s["accountants"]),
                "partitions": s["partitions"],
            }
            for root, s in roots.items()
        }

    def worst_guarantee(self) -> dict[str, Any] | None:
        """The guarantee (``guarantees``) with the largest ε: what the whole ledger promises; None when empty."""
        return max(self.guarantees().values(), key=lambda g: g["epsilon"], default=None)

    def main_entry(self) -> LedgerEntry:
        """The plan's main mechanism: the first one calibrated to a target ε (else the last one), not a
        fixed-σ preparation before it."""
        if not self.entries:
            raise KeyError("the ledger has no (ε, δ) entry")
        return next((e for e in self.entries if e.target_epsilon is not None), self.entries[-1])

    @property
    def notion(self) -> str:
        """The ledger's notion: dp or pac, or public when the model has seen declared-public data only; a
        ledger holding both dp and pac is refused (nothing composes the two)."""
        if self.entries and self.pac_releases:
            raise ValueError("the ledger mixes (ε, δ)-DP entries and PAC releases, which do not compose")
        if self.pac_releases:
            return "pac"
        return "public" if self.public_data and not self.entries else "dp"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"format": LEDGER_FORMAT, "entries": [e.to_dict() for e in self.entries]}
        if self.pac_releases:
            data["pac_releases"] = [r.to_dict() for r in self.pac_releases]
        if self.public_data:
            data["public_data"] = [p.to_dict() for p in self.public_data]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PrivacyLedger:
        if data.get("format") != LEDGER_FORMAT:
            raise ValueError(f"unsupported privacy ledger format {data.get('format')!r} (expected {LEDGER_FORMAT})")
        pac = [PACEntry(**r) for r in data.get("pac_releases", [])]
        public = [PublicDataUse(**p) for p in data.get("public_data", [])]
        return cls([LedgerEntry.from_dict(e) for e in data["entries"]], pac, public)
