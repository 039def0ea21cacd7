"""Model cards: huggingface_hub's ``ModelCardData`` (YAML with a ``privacy:`` block and
``model-index`` results) rendered with the card template ``templates/model_card.md``.

Everything in a card is read from the model's config.json, whose ledger was written by the
code path that trained the weights; nothing here computes or rounds a guarantee by hand
beyond calling the accountant named in the ledger. What a method adds (its name, usage lines,
notes) comes from the method class, which this module never names.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from zoo.data.sources import local_sources
from zoo.errors import UserError
from zoo.headline import HEADLINE_KEY, headline_disagreement
from zoo.methods import DPGenerativeModel, method_class
from zoo.privacy import PrivacyBarrier, PrivacyLedger, record_index
from zoo.privacy.accounting import accountant_library
from zoo.privacy.mechanisms import DP_SGD_BARRIERS
from zoo.privacy.records import named_source
from zoo.privacy.summary import (
    card_datasets,
    datasets_line,
    guarantee_summary,
    is_pac,
    is_public,
    is_seeded,
    privacy_metadata,
)
from zoo.release.layout import CheckpointError

TEMPLATE = "model_card.md"
BARRIERS = {
    "B1": "a one-shot statistic released with the Gaussian mechanism",
    "B1'": "a statistic of each step's Poisson minibatch released with the Gaussian mechanism",
    "B2": "DP-SGD on a critic or classifier; what is released sees the data only through it",
    "B3": "per-sample gradients from the critics into the generator output, clipped and noised",
    "B4": "DP-SGD on every released parameter",
    "PAC": "the mechanism's whole output, noised once with Gaussian noise calibrated by PAC privacy (not DP)",
    "public": "none: the model was trained on data declared public, without noise",
}
#: what a card says of a model trained with seeded randomness, after the stamp (``zoo.headline.stated_guarantee``)
SEEDED = (
    "Its noise or sampling was seeded, so the release is a deterministic function of the data: the ledger below "
    "records how the noise was calibrated, but its ε does not hold. Seeds are for tests: such a model is never "
    "published (push_to_hub refuses it)."
)


#: what public data is, on the card of a model that has seen nothing else
PUBLIC_DATA = (
    "declared public by whoever trained the model, for the reason given; it is used without noise, charged no "
    "(ε, δ) and protected by nothing"
)
#: what public data is, on the card of a model that also has protected data: the reason belongs to the stages
#: that declared it (a base's pretraining, say), and claims nothing about the data protected after them
PUBLIC_DATA_OF_EARLIER_STAGES = (
    "declared public by whoever ran the stages named below, for the reason they gave then: their words describe "
    "that data, not the protected data above. It is used without noise, charged no (ε, δ) and protected by nothing"
)
#: dpzoo's own tag of an (ε, δ)-DP model (``_notion_tag``)
DP_TAG = "differential-privacy"
#: the Hugging Face Hub's spelling of the same tag, and its tag of DP-SGD (``hub_tags``)
HUB_DP_TAG = "differential_privacy"
DP_SGD_TAG = "dp-sgd"
#: the privacy unit of a model (``privacy_unit``), by what its samples are (``DPGenerativeModel.sample_kind``)
PRIVACY_UNITS: dict[str, str] = {"images": "one image", "rows": "one table row"}
#: the rows of a card's Data section (``config["data"]``, all optional), in this order
DATA_LABELS = {
    "name": "name",
    "source": "read from",
    "columns": "columns",
    "records": "records: this folder in the trainer's record index",
    "classes": "classes",
    "images": "training images",
    "record": "a record is",
    "image_shape": "image shape",
    "preprocessing": "preprocessing",
    "held_out": "held out of training",
}


def headline(config: dict[str, Any], method: type[DPGenerativeModel] | None = None) -> dict[str, Any]:
    """What ``dpzoo list`` shows of a model (``zoo.headline``), computed from its ledger: ``save_pretrained``
    stores it in config.json so that listing runs no accountant. ``epsilon`` and ``delta`` are None for a
    PAC-private model (no (ε, δ)), whose ``pac`` holds its bounds instead, for a public base, and for a model
    trained with seeded randomness, whose ``seeded`` names the seeds. ``method``: the model's class (default: the
    registered class of ``config["method"]``)."""
    privacy = privacy_metadata(config)
    return {
        "method": (method or method_class(config["method"])).display_name(config),
        "dataset": datasets_line(privacy),
        "notion": privacy["notion"],
        "epsilon": privacy.get("epsilon"),
        "delta": privacy.get("delta"),
        "accountant": privacy.get("accountant"),
        "pac": privacy["guarantees"] if is_pac(privacy) else None,
        "seeded": privacy.get("seeded"),
    }


#: the configs whose stored headline was found to agree in this process: one config always gives one headline, so
#: loading a model again does not run its accountants again
_AGREEING: set[str] = set()


def check_headline(config: dict[str, Any], name: str | Path, method: type[DPGenerativeModel] | None = None) -> None:
    """Refuse the model ``name`` when its config.json's headline states another guarantee, data or method than its
    ledger and method give (a config without a stored headline states none). ``method`` as for ``headline``."""
    stored = config.get(HEADLINE_KEY)
    key = json.dumps(config, sort_keys=True)
    if stored is None or key in _AGREEING:
        return
    disagreement = headline_disagreement(stored, headline(config, method))
    if disagreement:
        raise CheckpointError(
            f"{name}: the headline config.json states disagrees with the one recomputed from its privacy ledger "
            f"({disagreement}); the folder was edited or written by another dpzoo: do not trust its stated guarantee"
        )
    _AGREEING.add(key)


def model_card(config: dict[str, Any], load_as: str, method: type[DPGenerativeModel] | None = None) -> ModelCard:
    """The card of a model folder; ``load_as`` is what its usage snippet passes to ``zoo.load``.
    ``method``: the model's class (default: the registered class of ``config["method"]``)."""
    method = method or method_class(config["method"])
    ledger = PrivacyLedger.from_dict(config["privacy_ledger"])
    privacy = card_privacy(config, method, ledger)
    datasets = sorted({name for name in map(_hub_dataset, card_datasets(privacy)) if name})
    evaluation = config.get("evaluation") or {}
    results = evaluation.get("results", [])
    data = ModelCardData(
        library_name="dpzoo",
        license=config.get("license"),
        tags=[_notion_tag(privacy), *hub_tags(privacy, ledger), *method.card_tags(config), *datasets, "dpzoo"],
        datasets=datasets,
        model_name=config["model_id"],
        eval_results=[EvalResult(**result) for result in results] or None,
        privacy=privacy,
    )
    template = resources.files("zoo.release").joinpath("templates", TEMPLATE).read_text()
    return ModelCard.from_template(
        data,
        template_str=template,
        model_id=config["model_id"],
        method=method.display_name(config),
        guarantees=privacy["guarantees"],
        privacy=privacy,
        pac=is_pac(privacy),
        public=is_public(privacy),
        seeded=is_seeded(privacy),
        stamp=guarantee_summary(privacy),
        seeded_means=SEEDED,
        public_data=privacy.get("public_data", []),
        public_data_means=PUBLIC_DATA_OF_EARLIER_STAGES if ledger.entries else PUBLIC_DATA,
        load_as=load_as,
        usage=method.card_usage(config),
        data_rows=data_rows(config.get("data") or {}),
        license=config.get("license"),
        barrier_description=BARRIERS.get(privacy["barrier"], privacy["barrier"]),
        ledger_rows=_ledger_rows(config),
        notes=[
            *method.card_notes(config),
            *_guarantee_notes(privacy),
            *_sources_notes(ledger),
            *_assumed_disjoint_notes(ledger),
        ],
        recipe=config.get("recipe") or {},
        evaluation=evaluation,
        results=results,
        per_class=_per_class_tables(evaluation.get("details", {}).get("results", {})),
    )


def _hub_dataset(dataset_id: str) -> str | None:
    """The dataset a card's ``datasets:`` and tags name: a named dataset's name; none for a user's own records,
    which only the trainer's local record index names (``zoo.privacy.record_index``)."""
    name = dataset_id.split("/")[0]
    return None if name.startswith(record_index.LOCAL) else name


def check_data(data: dict[str, Any]) -> None:
    """Refuse a data description the card would not show whole: keys other than ``DATA_LABELS``, or a local path
    where the data's name belongs (a card is made to be published)."""
    if not isinstance(data, dict):
        raise UserError(f"data must be a dict with keys among {list(DATA_LABELS)}, got {type(data).__name__}")
    unknown = sorted(set(data) - set(DATA_LABELS))
    if unknown:
        raise UserError(f"data has keys {unknown} that no card shows; its keys are {list(DATA_LABELS)}")
    name = data.get("name")
    if name is not None and (not isinstance(name, str) or Path(name).expanduser().is_absolute()):
        raise UserError(
            f"data['name'] must name the data in words, not as a local path ({name!r}): the card is published"
        )


def data_rows(data: dict[str, Any]) -> list[tuple[str, str]]:
    """The card's Data section: one (label, value) row per key of ``data`` that is given."""
    shown = {
        "records": lambda records: (
            f"`{records}` (the privacy ledger below names its training part `{records}/train[…]`)"
        ),
        "source": _source_text,
        "columns": lambda columns: ", ".join(f"{kind}s: `{name}`" for kind, name in columns.items() if name),
        "classes": lambda classes: f"{len(classes)}: " + ", ".join(map(str, classes)),
        "images": lambda images: f"{images:,}",
        "image_shape": lambda shape: "×".join(map(str, shape)),
        "held_out": _held_out_text,
    }
    return [
        (label, _table_cell(shown.get(key, str)(data[key])))
        for key, label in DATA_LABELS.items()
        if data.get(key) is not None
    ]


def _source_text(kind: str) -> str:
    """The kind of local data, in words (``zoo.data.sources``)."""
    source = local_sources().get(kind)
    return source.title if source is not None else kind


def _held_out_text(held_out: dict[str, Any]) -> str:
    """Its size first, then how it was chosen (a folder's ``test/`` part, or a fraction and seed). A digest of
    the held-out files, which configs written before the local record index hold, is never shown."""
    rest = {k: v for k, v in held_out.items() if k not in ("images", "digest") and v is not None}
    size = f"{held_out['images']:,} images" if "images" in held_out else "images"
    return size + "".join(f"; {key} {value}" for key, value in rest.items())


def _table_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _sources_notes(ledger: PrivacyLedger) -> list[str]:
    """What the ledger itself shows about protected and public data seen together: where both are named datasets,
    that they come from different sources (it refuses otherwise). Nothing is said about other data: the
    machine that trained checked the images against its local record index, which publishes nothing."""
    protected = {named_source(*entry.use) for entry in ledger.entries}
    public = {named_source(*use.use) for use in ledger.public_data}
    if not protected or not public or None in protected | public or protected & public:
        return []
    return [
        f"The protected records come from {', '.join(sorted(protected))}, the public records from "
        f"{', '.join(sorted(public))}: different named datasets, as the ledger requires (it refuses to protect "
        "records declared public). It does not compare near-duplicate images."
    ]


def _assumed_disjoint_notes(ledger: PrivacyLedger) -> list[str]:
    """What the guarantee rests on that no machine checked: a statement that public and protected data share no
    record, made where the record index could not show it (``PrivacyLedger.check_private_use``)."""
    public = [use.dataset_id for use in ledger.public_data if use.assumed_disjoint]
    stated = sorted({entry.dataset_id for entry in ledger.entries if entry.assumed_disjoint})
    notes = []
    if public:
        notes.append(
            f"Assumed, not checked: the public data {', '.join(public)} holds none of the protected records (declared "
            "by whoever used it; no record index holds its records). The guarantee does not cover a protected "
            "record that is among them."
        )
    if stated:
        notes.append(
            f"Assumed, not checked: {', '.join(stated)} shares no record with the public data above (stated by "
            "whoever trained on it, where that machine's record index could not show it). The guarantee does not "
            "cover a protected record that is also among the public data."
        )
    return notes


def _notion_tag(privacy: dict[str, Any]) -> str:
    if is_seeded(privacy):
        return "not-differentially-private"
    if is_public(privacy):
        return "public-data-only"
    return "pac-privacy" if is_pac(privacy) else DP_TAG


def hub_tags(privacy: dict[str, Any], ledger: PrivacyLedger) -> list[str]:
    """The tags other Hugging Face Hub models of differential privacy carry, beside dpzoo's own notion tag, so
    that a search of the Hub for them finds these models: ``differential_privacy`` (the Hub's spelling of
    ``differential-privacy``) for a model that states (ε, δ)-DP, and ``dp-sgd`` for one whose ledger holds a
    DP-SGD entry (barrier B2 or B4, ``DP_SGD_BARRIERS``). A PAC-private model (not DP), a public base and a seeded
    model state no DP guarantee and get neither; nor is a release of a noised statistic (B1, B1′) or GS-WGAN's
    sanitised generator gradients (B3) called DP-SGD."""
    if _notion_tag(privacy) != DP_TAG:
        return []
    dp_sgd = any(PrivacyBarrier(entry.barrier) in DP_SGD_BARRIERS for entry in ledger.entries)
    return [HUB_DP_TAG, *([DP_SGD_TAG] if dp_sgd else [])]


def card_privacy(config: dict[str, Any], method: type[DPGenerativeModel], ledger: PrivacyLedger) -> dict[str, Any]:
    """The card's ``privacy:`` block: ``privacy_metadata``, every field of it kept, with the fields that tools
    reading Hub cards look for placed beside those they restate: ``privacy_unit`` after the neighbouring relation,
    ``accountant_library`` after the accountant's description. A block with neither (PAC privacy, a public base)
    gets no such field: PAC privacy bounds what the release tells of the training subset as a whole, not of one
    record, and no accountant computes it."""
    after = {
        "neighbouring_relation": lambda: {"privacy_unit": privacy_unit(config, method)},
        "accountant_description": lambda: {"accountant_library": card_accountant_library(ledger)},
    }
    block: dict[str, Any] = {}
    for key, value in privacy_metadata(config).items():
        block[key] = value
        if key in after:
            block.update(after[key]())
    return block


def privacy_unit(config: dict[str, Any], method: type[DPGenerativeModel]) -> str:
    """What the neighbouring relation adds or removes, in the words Hub cards use for the privacy unit: one image
    for a model of images, one table row for a model of a table (DP-NF), as the method's ``card_sample_kind``
    says. It is the record the ledger's guarantee protects (the local record index keys the same unit)."""
    kind = method.card_sample_kind(config)
    try:
        return PRIVACY_UNITS[kind]
    except KeyError:
        raise CheckpointError(f"{config['model_id']}: no privacy unit for samples of kind {kind!r}") from None


def card_accountant_library(ledger: PrivacyLedger) -> str:
    """The package that computed the stated ε and its version, e.g. "opacus 1.6.0": the library of the accountant
    the block names (the main entry's, ``accountant_library``) at the version that entry recorded when the model
    was trained (``library_versions``), not the installed one, so that a reader can rerun the same accounting.
    Entries written before a library's version was recorded say so."""
    entry = ledger.main_entry()
    library = accountant_library(entry.accountant)
    version = entry.library_versions.get(library)
    return f"{library} {version}" if version and version != "not installed" else f"{library} (version not recorded)"


def _ledger_rows(config: dict[str, Any]) -> list[list[str]]:
    ledger = PrivacyLedger.from_dict(config["privacy_ledger"])
    epsilons = {d: ledger.epsilon(d) for d in dict.fromkeys(e.dataset_id for e in ledger.entries)}
    return [
        [
            entry.dataset_id,
            entry.mechanism,
            f"{entry.noise_multiplier:.4g}",
            f"{entry.clip_norm:g}",
            f"{entry.sample_rate:g}",
            str(entry.steps),
            f"{entry.delta:g}",
            entry.accountant,
            f"{epsilons[entry.dataset_id]:.4g}",
        ]
        for entry in ledger.entries
    ]


def _per_class_tables(details: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per metric that was also measured class by class (OOD AUROC of each class's model)."""
    tables = []
    for metric, result in details.items():
        per_class = result.get("per_class") if isinstance(result, dict) else None
        if per_class:
            per_class = {str(c): v for c, v in per_class.items()}  # int keys when fresh, str once stored as JSON
            tables.append(
                {
                    "metric": metric,
                    "classes": list(per_class),
                    "scores": [f"{v:.3f}" for v in per_class.values()],
                    "mean": f"{result['value']:.3f}",
                }
            )
    return tables


#: above this ε a card says plainly that the number protects no one
VACUOUS_EPSILON = 100.0


def _guarantee_notes(privacy: dict[str, Any]) -> list[str]:
    """What the guarantees mean together (``_composition_notes``); none for a seeded model, which states none."""
    return [] if is_seeded(privacy) else _composition_notes(privacy)


def _composition_notes(privacy: dict[str, Any]) -> list[str]:
    notes = _shared_records_notes(privacy["guarantees"])
    for guarantee in privacy["guarantees"]:
        if guarantee.get("epsilon", 0.0) > VACUOUS_EPSILON:  # a PAC guarantee has no ε
            notes.append(
                f"ε = {guarantee['epsilon']:g} for {guarantee['dataset']} protects no one: it allows any outcome "
                f"to become e^{guarantee['epsilon']:g} times likelier with a record than without, so this model "
                "shows what the method learns under the noise its sound accounting sets, not a private release."
            )
        if guarantee["partitions"]:
            parts = guarantee["partitions"]
            trained = "one disjoint part" if parts == 1 else f"{parts} disjoint parts, each at its own budget"
            notes.append(
                f"Trained on {trained} of {guarantee['dataset']}; by parallel composition the release is "
                f"(ε = {guarantee['epsilon']}, δ = {guarantee['delta']:g})-DP for the whole dataset."
            )
    groups = {frozenset([g["dataset"], *g.get("composed_with", [])]) for g in privacy["guarantees"]}
    if len(groups) > 1:
        notes.append(
            "The model was trained (or fine-tuned) on several datasets; each dataset has its own guarantee, "
            "and later training on other records is post-processing for the earlier data."
        )
    return notes


def _shared_records_notes(guarantees: list[dict[str, Any]]) -> list[str]:
    """One note per group of datasets drawn from one source (other splits of the same records)."""
    notes, noted = [], set()
    for guarantee in guarantees:
        group = [guarantee["dataset"], *guarantee.get("composed_with", [])]
        if len(group) > 1 and guarantee["dataset"] not in noted:
            noted.update(group)
            notes.append(
                f"{' and '.join(group)} are drawn from the same records (other splits of one source), so they "
                f"may share records: their ledger entries compose, and the (ε = {guarantee['epsilon']}, "
                f"δ = {guarantee['delta']:g}) of each covers them all."
            )
    return notes
