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
#: the decimals every surface states an ε with (card, config.json, ``dpzoo list``, ``dpzoo sample``)
EPSILON_DECIMALS = 4
#: the packages whose versions every entry records: the accountants' libraries among them (``ACCOUNTANT_LIBRARIES``),
#: whose recorded version a card states as its ``accountant_library``
_VERSIONED_PACKAGES = ("dpzoo", "torch", "opacus", "dp-accounting", "pytorch-lightning")


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
    #: the trainer stated that these records share none with the ledger's public data, which this machine could
    #: not show (``DPBudget(assume_disjoint=True)``); the card says so
    assumed_disjoint: bool = False
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
    ``records_identity`` names its records (``zoo.privacy.records``; None when written before it was recorded).
    ``assumed_disjoint``: the declarer's statement, shown on the card, that none of these records is among the
    protected ones where this machine cannot show it (a public network's training set, whose records the local
    index does not hold); without it such a pair is refused."""

    dataset_id: str
    records: int
    source: str
    stage: str
    records_identity: str | None = None
    assumed_disjoint: bool = False
    created: str = field(default_factory=lambda: datetime.datetime.now(datetime.timezone.utc).isoformat())

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def use(self) -> tuple[str | None, str]:
        """(records identity, dataset id): what ``zoo.privacy.records`` compares."""
        return self.records_identity, self.dataset_id


def stated_epsilon(epsilon: float) -> float:
    """ε as every surface states it: one rounding, so the command line and the card print the same digits."""
    return round(epsilon, EPSILON_DECIMALS)


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

    def calibration_target(
        self,
        target_epsilon: float,
        dataset_id: str,
        records_identity: str | None,
        partition_of: str | None = None,
        exclude: LedgerEntry | None = None,
    ) -> tuple[float, History]:
        """What a new use of data (``dataset_id``, ``records_identity``, a share of ``partition_of``) may be
        calibrated to so that the card's ε (``guarantees``) is ``target_epsilon``: (ε for its sequential
        composition, the mechanisms it composes with sequentially). The card composes the whole-data entries of
        every linked dataset (uses that may share records) sequentially and adds the largest partition's ε of each
        (basic composition): a whole-data use joins the first, a partition its own partition's entries, and what
        the card adds besides is taken off the target. Refused when nothing is left."""
        uses = {root: [e.use for e in entries if e is not exclude] for root, entries in self._by_root().items()}
        root = partition_of or dataset_id
        uses.setdefault(root, []).append((records_identity, dataset_id))
        group = _linked(uses)[root]
        linked = [e for e in self.entries if e is not exclude and (e.partition_of or e.dataset_id) in group]
        wholes = [e for e in linked if not e.partition_of]
        largest_part: dict[str, float] = {}
        for part in dict.fromkeys(e.dataset_id for e in linked if e.partition_of and e.dataset_id != dataset_id):
            part_root = self._latest(part).partition_of or part
            largest_part[part_root] = max(largest_part.get(part_root, 0.0), self.epsilon(part))
        if partition_of is None:
            sequential, added = wholes, sum(largest_part.values())
        else:
            sequential = [e for e in linked if e.dataset_id == dataset_id]
            added = sum(eps for part_root, eps in largest_part.items() if part_root != root) + _sequential(wholes)
        if added >= target_epsilon:
            raise PrivacyConfigError(
                f"the ledger composes {dataset_id} with data that may share its records, whose releases already add "
                f"ε = {added:.4g} to the card's ε: nothing of ε = {target_epsilon} is left to train with. Ask for a "
                "larger ε: it is the ε the card will state"
            )
        return target_epsilon - added, [h for e in sequential for h in e.history()]

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
        groups = _linked({root: [e.use for e in entries] for root, entries in by_root.items()})
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
        epsilon, delta = _sequential(whole), whole[-1].delta if whole else 0.0
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

    def check_private_use(self, dataset_id: str, records_identity: str | None, assume_disjoint: bool = False) -> None:
        """Refuse to protect records (``dataset_id``, ``records_identity``) of which the ledger holds some as
        public data, or may hold some: where neither the local record index nor the named sources tell, the
        public data's declarer or the trainer must ``assume_disjoint`` (fails closed; the card states it)."""
        for public in self.public_data:
            shared = shared_records((records_identity, dataset_id), public.use)
            if shared:
                raise PrivacyConfigError(
                    f"{dataset_id} shares records with {public.dataset_id}, which the ledger holds as public data "
                    f"(declared public because: {public.source}): records cannot be both public and protected; "
                    "train on records that were not declared public"
                )
            if shared is None and not (public.assumed_disjoint or assume_disjoint):
                raise PrivacyConfigError(_unknown_overlap(dataset_id, public.dataset_id, PRIVATE_SIDE_FIX))

    def check_public_use(self, dataset_id: str, records_identity: str | None, assume_disjoint: bool = False) -> None:
        """Refuse to declare public data that shares records with data the ledger protects, or that nothing
        shows does not, unless the declarer ``assume_disjoint`` (stated on the card; fails closed)."""
        for protected in self.entries:
            shared = shared_records((records_identity, dataset_id), protected.use)
            if shared:
                raise PrivacyConfigError(
                    f"the data declared public ({dataset_id}) shares records with {protected.dataset_id}, which the "
                    "ledger protects: records cannot be both public and protected; declare public only records the "
                    "model was not trained on privately"
                )
            if shared is None and not assume_disjoint:
                raise PrivacyConfigError(_unknown_overlap(protected.dataset_id, dataset_id, PUBLIC_SIDE_FIX))

    def summary_lines(self) -> list[str]:
        """Each guarantee in one line, in its own notion (what the command line prints)."""
        lines = [
            f"privacy: (ε = {stated_epsilon(g['epsilon'])}, δ = {g['delta']:g})-DP for {dataset} "
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


#: how the trainer states what the index cannot show, on each side of the check
PRIVATE_SIDE_FIX = (
    "zoo.finetune(..., assume_disjoint=True) or DPBudget(assume_disjoint=True); dpzoo train --assume-disjoint; "
    "dpzoo fit --privacy.assume_disjoint=true"
)
PUBLIC_SIDE_FIX = "PublicData(..., assume_disjoint=True)"


def _sequential(entries: list[LedgerEntry]) -> float:
    """ε of ``entries`` composed sequentially, at the latest one's δ and accountant (as ``guarantees``); 0 for none."""
    if not entries:
        return 0.0
    return epsilon_spent([h for e in entries for h in e.history()], entries[-1].delta, entries[-1].accountant)


def _unknown_overlap(protected: str, public: str, fix: str) -> str:
    return (
        f"nothing on this machine shows that {public}, declared public, shares no record with {protected}, which "
        "the ledger protects (the local record index does not hold both: a model trained or pretrained on another "
        "machine, or a cleared index), and records cannot be both public and protected. Use both on this machine, "
        f"or, if you know they share no record, say so ({fix}): the card states it"
    )


def _linked(uses_by_root: dict[str, list[tuple[str | None, str]]]) -> dict[str, tuple[str, ...]]:
    """Each root's group: the roots whose uses it may share records with, directly or through others (every two
    uses, unless a public fact shows them apart: ``zoo.privacy.records.disjoint_by_name``)."""
    groups: list[tuple[list[tuple[str | None, str]], tuple[str, ...]]] = []
    for root, uses in uses_by_root.items():
        linked = [g for g in groups if any(not disjoint_by_name(a, b) for a in g[0] for b in uses)]
        merged = ([*(u for g in linked for u in g[0]), *uses], (*(k for g in linked for k in g[1]), root))
        groups = [group for group in groups if all(group is not g for g in linked)] + [merged]
    return {key: keys for _, keys in groups for key in keys}
