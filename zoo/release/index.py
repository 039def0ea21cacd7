"""MODEL_CARDS.md: one row per shipped checkpoint, read from its config.json, and the results table beside
DPImageBench (``zoo.release.results_table``). ``dpzoo model-cards`` writes it; a test checks it is current."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zoo.methods import method_class
from zoo.privacy.summary import PUBLIC_INFORMATION, datasets_line, guarantee_summary, is_public, privacy_metadata
from zoo.release.layout import load_config
from zoo.release.results_table import results_table


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
        "A PAC-private model states a mutual-information bound at a confidence instead (P3DM): a different "
        "notion, never an (ε, δ).",
        "",
        "| model | method | data | guarantee | accountant | metrics | samples |",
        "|---|---|---|---|---|---|---|",
    ]
    folders = sorted(p.parent for p in checkpoints.glob("*/config.json"))
    for folder in folders:
        config = load_config(folder)
        privacy = privacy_metadata(config)
        datasets = datasets_line(privacy)
        results = (config.get("evaluation") or {}).get("results", [])
        metrics = "; ".join(f"{r.get('metric_name') or r['metric_type']} {r['metric_value']}" for r in results)
        rows.append(
            f"| [{folder.name}](checkpoints/{folder.name}/README.md) | {_display_method(config)} | {datasets} | "
            f"{guarantee_summary(privacy)} | {_accountant_column(privacy)} | "
            f"{metrics or 'not evaluated'} | ![](checkpoints/{folder.name}/samples.png) |"
        )
    if not folders:
        rows.append("| no checkpoint shipped yet | | | | | | |")
    rows += ["", *results_table(folders)]
    return "\n".join(rows) + "\n"


def _display_method(config: dict[str, Any]) -> str:
    return method_class(config["method"]).display_name(config)


def _accountant_column(privacy: dict[str, Any]) -> str:
    return privacy.get("accountant") or ("none" if is_public(privacy) else "Monte-Carlo (PAC)")
