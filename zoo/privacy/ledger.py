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

from zoo.errors import UserError
from zoo.privacy.accounting import History, epsilon_spent
from zoo.privacy.errors import PrivacyConfigError
from zoo.privacy.pac import PACEntry, describe_pac
from zoo.privacy.records import disjoint_by_name, shared_records

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
    on when it is not just ``clip_norm`` (B3: rows per step and the per-row noise). ``records_identity``
    names the records it touched (``zoo.privacy.records``); entries written before it was recorded have None.
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
    records_identity: str | None = None
    per_example_gradients: str | None = None
    #: randomness the run fixed by a seed ("noise_seed=0", "sampling_seed=1"): with a known seed the release is a
    #: deterministic function of the data, so the entry carries no guarantee (tests only)
    seeded: list[str] = field(default_factory=list)
    note: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    library_versions: dict[str, str] = field(default_factory=library_versions)
    created: str = field(default_factory=lambda: datetime.datetime.now(datetime.timezone.utc).isoformat())

    def history(self) -> History:
        return [(self.noise_multiplier, self.sample_rate, self.steps)]

    @property
    def use(self) -> tuple[str | None, str]:
        """(records identity, dataset id): what ``zoo.privacy.records`` compares."""
        return self.records_identity, self.dataset_id

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LedgerEntry:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise UserError(f"unknown privacy ledger fields {sorted(unknown)}; was it written by a newer dpzoo?")
        return cls(**data)


@dataclass
class PublicDataUse:
    """Data the user declared public (``zoo.data.PublicData``), used without noise: the ledger names it by
    its dataset id and charges it no (ε, δ). It carries no guarantee, and the declaration is the user's:
    ``source`` is their statement of why it is public.
    ``records_identity`` names its records (``zoo.privacy.records``; None when written before it was recorded)."""

    dataset_id: str
    records: int
    source: str
    stage: str
    records_identity: str | None = None
    created: str = field(default_factory=lambda: datetime.datetime.now(datetime.timezone.utc).isoformat())

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def use(self) -> tuple[str | None, str]:
        """(records identity, dataset id): what ``zoo.privacy.records`` compares."""
        return self.records_identity, self.dataset_id


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
        latest = self._latest(dataset_id)
        delta = latest.delta if delta is None else delta
        accountant = latest.accountant if accountant is None else accountant
        return epsilon_spent(self.history(dataset_id), delta, accountant)

    def guarantees(self) -> dict[str, dict[str, Any]]:
        """(ε, δ) per protected dataset: a dataset id, or the whole dataset its partitions share.

        Entries on one dataset id compose sequentially through the accountant. Disjoint partitions of one
        dataset (``partition_of``) compose in parallel: (max ε, max δ). Whole-dataset entries and the
        partitions then compose by basic composition: ε and δ add. Datasets that may share records (all but
        named datasets of different sources: ``zoo.privacy.records``) each report the composition of them all,
        and ``composed_with`` names the others: their whole-dataset entries sequentially, and the partitions
        of each added.
        """
        by_root = self._by_root()
        parts = {root: self._partitions(entries) for root, entries in by_root.items()}
        groups = _linked(by_root)
        composed = {group: self._composed(group, parts) for group in dict.fromkeys(groups.values())}
        return {
            root: {
                **composed[groups[root]],
                "partitions": {part: epsilon for part, (epsilon, _) in parts[root].items()},
                "composed_with": [other for other in groups[root] if other != root],
            }
            for root in by_root
        }

    def _by_root(self) -> dict[str, list[LedgerEntry]]:
        """Entries by the dataset they protect: their dataset id, or the whole dataset of their partition."""
        roots: dict[str, list[LedgerEntry]] = {}
        for entry in self.entries:
            roots.setdefault(entry.partition_of or entry.dataset_id, []).append(entry)
        return roots

    def _partitions(self, entries: list[LedgerEntry]) -> dict[str, tuple[float, float]]:
        """(ε, δ) of each partition among ``entries``, its entries composed sequentially."""
        parts = dict.fromkeys(e.dataset_id for e in entries if e.partition_of)
        return {part: (self.epsilon(part), self._latest(part).delta) for part in parts}

    def _composed(self, roots: tuple[str, ...], parts: dict[str, dict[str, tuple[float, float]]]) -> dict[str, Any]:
        """(ε, δ) of datasets that may share records: their whole-dataset entries sequentially, plus the
        parallel composition of each one's partitions (``parts``)."""
        whole = [e for e in self.entries if not e.partition_of and e.dataset_id in roots]
        epsilon, delta = 0.0, 0.0
        if whole:
            history = [h for e in whole for h in e.history()]
            epsilon, delta = epsilon_spent(history, whole[-1].delta, whole[-1].accountant), whole[-1].delta
        for root in roots:
            epsilon += max((e for e, _ in parts[root].values()), default=0.0)
            delta += max((d for _, d in parts[root].values()), default=0.0)
        accountants = {e.accountant for e in self.entries if (e.partition_of or e.dataset_id) in roots}
        return {"epsilon": epsilon, "delta": delta, "accountants": sorted(accountants)}

    def _latest(self, dataset_id: str) -> LedgerEntry:
        latest = [e for e in self.entries if e.dataset_id == dataset_id]
        if not latest:
            raise KeyError(f"the ledger has no entry for dataset {dataset_id!r}")
        return latest[-1]

    def check_same_name(self, dataset_id: str, records_identity: str | None) -> None:
        """Refuse ``dataset_id`` for records the ledger holds under another name: one dataset, one name."""
        named = next((e.dataset_id for e in self.entries if records_identity == e.records_identity), dataset_id)
        if records_identity and named != dataset_id:
            raise PrivacyConfigError(
                f"the ledger holds these records ({records_identity}) as {named}, not {dataset_id}: spend on them "
                f"under that name (DPBudget(dataset_id={named!r}), or no dataset_id)"
            )

    def check_private_use(self, dataset_id: str, records_identity: str | None) -> None:
        """Refuse to protect records (``dataset_id``, ``records_identity``) of which the ledger holds some as
        public data (the local record index, or one named source, shows it)."""
        public = next((p for p in self.public_data if shared_records((records_identity, dataset_id), p.use)), None)
        if public is not None:
            raise PrivacyConfigError(
                f"{dataset_id} shares records with {public.dataset_id}, which the ledger holds as public data "
                f"(declared public because: {public.source}): records cannot be both public and protected; train "
                "on records that were not declared public"
            )

    def check_public_use(self, dataset_id: str, records_identity: str | None) -> None:
        """Refuse to declare public data that shares records with data the ledger protects."""
        protected = next((e for e in self.entries if shared_records((records_identity, dataset_id), e.use)), None)
        if protected is not None:
            raise PrivacyConfigError(
                f"the data declared public ({dataset_id}) shares records with {protected.dataset_id}, which the "
                "ledger protects: records cannot be both public and protected; declare public only records the "
                "model was not trained on privately"
            )

    def summary_lines(self) -> list[str]:
        """Each guarantee in one line, in its own notion (what the command line prints)."""
        lines = [
            f"privacy: (ε = {g['epsilon']:.3g}, δ = {g['delta']:g})-DP for {dataset} "
            f"({', '.join(g['accountants'])} accountant)"
            for dataset, g in self.guarantees().items()
        ]
        return lines + [f"{describe_pac(release)} for {release.dataset_id}" for release in self.pac_releases]

    def worst_guarantee(self) -> dict[str, Any] | None:
        """The guarantee (``guarantees``) with the largest ε: what the whole ledger promises; None when empty."""
        return max(self.guarantees().values(), key=lambda g: g["epsilon"], default=None)

    @property
    def seeded(self) -> list[str]:
        """The seeds the ledger's mechanisms ran with ("noise_seed=0", "sampling_seed=1"), DP entries and PAC
        releases alike: with a known seed a release is a deterministic function of the data, so any seed means
        no guarantee (seeds are for tests)."""
        uses: list[LedgerEntry | PACEntry] = [*self.entries, *self.pac_releases]
        return list(dict.fromkeys(seed for use in uses for seed in use.seeded))

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
            raise UserError("the ledger mixes (ε, δ)-DP entries and PAC releases, which do not compose")
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
            raise UserError(f"unsupported privacy ledger format {data.get('format')!r} (expected {LEDGER_FORMAT})")
        pac = [PACEntry(**r) for r in data.get("pac_releases", [])]
        public = [PublicDataUse(**p) for p in data.get("public_data", [])]
        return cls([LedgerEntry.from_dict(e) for e in data["entries"]], pac, public)


def _linked(by_root: dict[str, list[LedgerEntry]]) -> dict[str, tuple[str, ...]]:
    """Each root's group: the roots whose entries it may share records with, directly or through others
    (every two entries, unless a public fact shows them apart: ``zoo.privacy.records.disjoint_by_name``)."""
    groups: list[tuple[list[LedgerEntry], tuple[str, ...]]] = []
    for root, entries in by_root.items():
        linked = [g for g in groups if any(not disjoint_by_name(a.use, b.use) for a in g[0] for b in entries)]
        merged = ([*(e for g in linked for e in g[0]), *entries], (*(k for g in linked for k in g[1]), root))
        groups = [group for group in groups if all(group is not g for g in linked)] + [merged]
    return {key: keys for _, keys in groups for key in keys}
