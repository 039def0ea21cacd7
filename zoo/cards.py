"""Model cards: YAML metadata with a ``privacy:`` block and ``model-index`` results, plus prose.

Everything in a card is read from the model's config.json, whose ledger was written by the
code path that trained the weights; nothing here computes or rounds a guarantee by hand
beyond calling the accountant named in the ledger.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from zoo.hub import CARD_NAME, load_config
from zoo.privacy import PrivacyLedger
from zoo.privacy.accounting import describe_accountant

LICENSE = "apache-2.0"
_BARRIERS = {
    "B1": "a one-shot statistic released with the Gaussian mechanism",
    "B2": "DP-SGD on a critic; the generator only sees the private critic",
    "B3": "per-sample gradients from the critics into the generator output, clipped and noised",
    "B4": "DP-SGD on every released parameter",
}


#: what the guarantee does not hide, as in Opacus
PUBLIC_INFORMATION = (
    "the number of training records (of each part, for models trained per class): the ledger records it and "
    "DP-SGD divides its noisy sum by the expected batch size q·N"
)
#: what the guarantee covers
COVERAGE = (
    "everything in this folder: the weights, samples, figures, config.json and this card; evaluation numbers "
    "are computed from the released model, its samples and data outside the protected records"
)


def privacy_metadata(config: dict[str, Any]) -> dict[str, Any]:
    """The card's ``privacy:`` block, one guarantee per source dataset."""
    ledger = PrivacyLedger.from_dict(config["privacy_ledger"])
    guarantees = ledger.guarantees()
    # the training run, not a one-shot release before it (a private standardisation, say)
    first = next((e for e in ledger.entries if e.barrier != "B1"), ledger.entries[0])
    worst = max(guarantees.values(), key=lambda g: g["epsilon"])
    return {
        "notion": "(epsilon, delta)-differential privacy",
        "neighbouring_relation": "add or remove one training record",
        "public": PUBLIC_INFORMATION,
        "covers": COVERAGE,
        "epsilon": round(worst["epsilon"], 4),
        "delta": worst["delta"],
        "accountant": first.accountant,
        "accountant_description": describe_accountant(first.accountant),
        "barrier": first.barrier,
        "mechanism": first.mechanism,
        "noise_multiplier": first.noise_multiplier,
        "clip_norm": first.clip_norm,
        "sample_rate": first.sample_rate,
        "steps": first.steps,
        "released": list(config["released_modules"]),
        "guarantees": [
            {
                "dataset": root,
                "epsilon": round(g["epsilon"], 4),
                "delta": g["delta"],
                "partitions": len(g["partitions"]),
            }
            for root, g in guarantees.items()
        ],
    }


def display_method(config: dict[str, Any]) -> str:
    base = config["architecture"].get("base_method")
    return f"{base} (one model per class)" if base else config["method"]


def model_card(config: dict[str, Any], load_as: str) -> ModelCard:
    """The card of a model folder; ``load_as`` is what its usage snippet passes to ``zoo.load``."""
    privacy = privacy_metadata(config)
    datasets = sorted({g["dataset"].split("/")[0] for g in privacy["guarantees"]})
    evaluation = config.get("evaluation") or {}
    results = [EvalResult(**result) for result in evaluation.get("results", [])]
    methods = [config["method"], config["architecture"].get("base_method")]
    data = ModelCardData(
        library_name="dpzoo",
        license=LICENSE,
        tags=["differential-privacy", *[m for m in methods if m], *datasets, "dpzoo"],
        datasets=datasets,
        model_name=config["model_id"],
        eval_results=results or None,
        privacy=privacy,
    )
    return ModelCard(f"---\n{data.to_yaml()}\n---\n{_prose(config, privacy, evaluation, load_as)}")


def _prose(config: dict[str, Any], privacy: dict[str, Any], evaluation: dict[str, Any], load_as: str) -> str:
    model_id, method = config["model_id"], display_method(config)
    ledger = PrivacyLedger.from_dict(config["privacy_ledger"])
    headline = "; ".join(
        f"**(ε = {g['epsilon']}, δ = {g['delta']:g}) for {g['dataset']}**" for g in privacy["guarantees"]
    )
    lines = [
        f"# {model_id}",
        "",
        f"A {method} model trained with differential privacy by dpzoo: {headline}, "
        f"accounted by the {privacy['accountant'].upper()} accountant ({privacy['accountant_description']}).",
        "",
        "![samples](samples.png)",
        "",
        "## Usage",
        "",
        "```python",
        "import zoo",
        f'model = zoo.load("{load_as}")',
        *_usage(config),
        "```",
        "",
        "## Privacy",
        "",
        f"Barrier {privacy['barrier']}: {_BARRIERS.get(privacy['barrier'], privacy['barrier'])}. "
        f"Released: {', '.join(privacy['released'])}; nothing else that saw the data is published.",
        "",
        f"Neighbouring datasets differ by one record (added or removed). The guarantee covers {privacy['covers']}. "
        f"Treated as public, as in Opacus: {privacy['public']}.",
        "",
        "| dataset | mechanism | σ | C | sampling rate | steps | δ | accountant | ε |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    epsilons = {d: ledger.epsilon(d) for d in dict.fromkeys(e.dataset_id for e in ledger.entries)}
    for entry in ledger.entries:
        lines.append(
            f"| {entry.dataset_id} | {entry.mechanism} | {entry.noise_multiplier:.4g} | {entry.clip_norm:g} | "
            f"{entry.sample_rate:g} | {entry.steps} | {entry.delta:g} | {entry.accountant} | "
            f"{epsilons[entry.dataset_id]:.4g} |"
        )
    standardisation = config["architecture"].get("standardisation")
    if standardisation:
        lines += ["", f"Standardisation of the features: {standardisation}."]
    lines += ["", *_composition_notes(privacy), ""]
    recipe = config.get("recipe") or {}
    lines += ["## How it was trained", ""]
    if recipe:
        lines += [f"Recipe `{recipe.get('config')}`, trained with `{recipe.get('command')}`.", ""]
        if recipe.get("selection"):
            lines += [f"Hyperparameter selection: {recipe['selection']}", ""]
    else:
        lines += ["No recipe was recorded for this model.", ""]
    lines += ["## Evaluation", ""]
    if evaluation.get("results"):
        lines += [f"Measured with `{evaluation.get('command')}`.", "", "| metric | value | protocol |", "|---|---|---|"]
        for result in evaluation["results"]:
            lines.append(
                f"| {result.get('metric_name') or result['metric_type']} | {result['metric_value']} | "
                f"{result.get('metric_config', '')} |"
            )
        lines += _per_class_tables(evaluation.get("details", {}).get("results", {}))
        lines += [line for figure in evaluation.get("figures", []) for line in ("", f"![{figure}]({figure})")]
    else:
        lines.append("Not evaluated yet.")
    lines += [
        "",
        "## Intended use and limits",
        "",
        "Synthetic data and densities for research and development where the training data must stay "
        "private. The guarantee covers the training records listed above, not the public information "
        "used to design the model; DP bounds what an attacker can learn about any one record, it does not "
        "make samples accurate, fair or free of the data's biases. Check utility on your own task before "
        "relying on synthetic data.",
        "",
    ]
    return "\n".join(lines)


def _usage(config: dict[str, Any]) -> list[str]:
    if "feature_mean" in config["architecture"]:
        return [
            "rows = model.sample(1000, seed=0)  # (1000, features), in the table's units",
            "log_density = model.log_prob(rows)  # exact, nats per row",
        ]
    return ["images = model.sample(64, seed=0)  # float tensor in [0, 1]"]


def _per_class_tables(details: dict[str, Any]) -> list[str]:
    """One row per metric that was also measured class by class (OOD AUROC of each class's model)."""
    lines: list[str] = []
    for metric, result in details.items():
        per_class = result.get("per_class") if isinstance(result, dict) else None
        if not per_class:
            continue
        per_class = {str(c): v for c, v in per_class.items()}  # int keys when fresh, str once stored as JSON
        classes = list(per_class)
        lines += [
            "",
            f"{metric} per class:",
            "",
            "| class | " + " | ".join(classes) + " | mean |",
            "|---" * (len(classes) + 2) + "|",
            f"| {metric} | " + " | ".join(f"{per_class[c]:.3f}" for c in classes) + f" | {result['value']:.3f} |",
        ]
    return lines


def _composition_notes(privacy: dict[str, Any]) -> list[str]:
    notes = []
    for guarantee in privacy["guarantees"]:
        if guarantee["partitions"]:
            parts = guarantee["partitions"]
            trained = "one disjoint part" if parts == 1 else f"{parts} disjoint parts, each at its own budget"
            notes.append(
                f"Trained on {trained} of {guarantee['dataset']}; by parallel composition the release is "
                f"(ε = {guarantee['epsilon']}, δ = {guarantee['delta']:g})-DP for the whole dataset."
            )
    if len(privacy["guarantees"]) > 1:
        notes.append(
            "The model was trained (or fine-tuned) on several datasets; each dataset has its own guarantee, "
            "and later training is post-processing for the earlier data."
        )
    return notes


def load_card(directory: str | Path) -> ModelCard:
    return ModelCard.load(Path(directory) / CARD_NAME)


def model_cards_index(checkpoints: Path) -> str:
    """MODEL_CARDS.md: one row per shipped checkpoint, read from its config.json."""
    rows = [
        "# Model cards",
        "",
        "Generated from `checkpoints/` by `dpzoo model-cards`; do not edit by hand.",
        "",
        "Each model's (ε, δ) is recomputed from the ledger in its config.json (neighbouring datasets differ by "
        "one added or removed record). It covers everything its checkpoint folder publishes (weights, samples, "
        "figures, config.json, card) and its row here: every metric is computed from the released model, its "
        "samples and data outside the protected records; membership audits and other numbers read from protected "
        "records are local diagnostics and appear nowhere here. Treated as public, as in Opacus: "
        f"{PUBLIC_INFORMATION}.",
        "",
        "| model | method | data | ε | δ | accountant | metrics | samples |",
        "|---|---|---|---|---|---|---|---|",
    ]
    folders = sorted(p.parent for p in checkpoints.glob("*/config.json"))
    for folder in folders:
        config = load_config(folder)
        privacy = privacy_metadata(config)
        datasets = ", ".join(g["dataset"] for g in privacy["guarantees"])
        results = (config.get("evaluation") or {}).get("results", [])
        metrics = "; ".join(f"{r.get('metric_name') or r['metric_type']} {r['metric_value']}" for r in results)
        rows.append(
            f"| [{folder.name}](checkpoints/{folder.name}/README.md) | {display_method(config)} | {datasets} | "
            f"{privacy['epsilon']} | {privacy['delta']:g} | {privacy['accountant']} | {metrics or 'not evaluated'} | "
            f"![](checkpoints/{folder.name}/samples.png) |"
        )
    if not folders:
        rows.append("| no checkpoint shipped yet | | | | | | | |")
    return "\n".join(rows) + "\n"
