"""The results table of MODEL_CARDS.md: every image checkpoint's measured CNN and ResNet CAS and FID, read from its
config.json, beside DPImageBench's published numbers for the same method, dataset and ε
(``zoo.release.literature``), with the protocol of each side. Generated, never copied by hand. Each column shows
the metric its spec puts there (``zoo.release.metric_spec.Headline``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zoo.release.layout import load_config
from zoo.release.literature import (
    CAVEATS,
    DPIMAGEBENCH,
    DPIMAGEBENCH_PROTOCOL,
    DPIMAGEBENCH_SOURCE,
    SOUND_EPSILON_COMMAND,
    SOUND_EPSILON_PROTOCOL,
    dpimagebench,
)
from zoo.release.metric_result import MetricResult
from zoo.release.metric_spec import filling

#: the headline columns the table shows beside DPImageBench's accuracy and FID, and their headers
COLUMNS = {
    "CNN CAS": "CNN CAS (%)",
    "ResNet-18 CAS": "ResNet-18 CAS (%) [real data]",
    "FID": "FID (extractor; samples vs reference)",
}


def results_table(folders: list[Path]) -> list[str]:
    """Markdown lines: a heading, the two protocols, and one row per evaluated image checkpoint with an ε."""
    rows = [
        "## Beside DPImageBench",
        "",
        f"Each evaluated image checkpoint with an (ε, δ) guarantee, beside {DPIMAGEBENCH_SOURCE} for the same "
        "method, dataset and ε (— where it publishes none). The protocols differ, so read the columns side by "
        f"side, not as one ranking. {DPIMAGEBENCH_PROTOCOL}.",
        "",
        f"| model | data | ε | {' | '.join(COLUMNS.values())} | DPImageBench accuracy (%) | DPImageBench FID | note |",
        "|---" * (len(COLUMNS) + 6) + "|",
    ]
    caveats = []
    for folder in folders:
        config = load_config(folder)
        headline = config.get("headline") or {}
        details = ((config.get("evaluation") or {}).get("details") or {}).get("results") or {}
        if headline.get("epsilon") is None or not any(filling(column, details) for column in COLUMNS):
            continue
        dataset = (config.get("data") or {}).get("name") or _dataset_name(headline["dataset"])
        published = dpimagebench(headline["method"], dataset, headline["epsilon"])
        rows.append(
            f"| [{folder.name}](checkpoints/{folder.name}/README.md) | {dataset} | {headline['epsilon']:g} | "
            f"{' | '.join(_cell(column, details) for column in COLUMNS)} | "
            f"{_number(published.accuracy) if published else '—'} | {_number(published.fid) if published else '—'} | "
            f"{published.caveat if published else ''} |"
        )
        caveats += [published.caveat] if published and published.caveat else []
    return [
        *rows,
        "",
        *(f"*{caveat}*: {CAVEATS[caveat]}." for caveat in dict.fromkeys(caveats)),
        "",
        *sound_epsilon_table(),
    ]


def sound_epsilon_table() -> list[str]:
    """DPImageBench's runs whose stated ε is not a guarantee, each with the sound ε of its own settings."""
    rows = [
        f"### {DPIMAGEBENCH_SOURCE} at the sound ε of its own settings",
        "",
        f"`{SOUND_EPSILON_COMMAND}`: {SOUND_EPSILON_PROTOCOL}.",
        "",
        "| method | data | stated ε (not a guarantee) | sound ε | ε of the records queried at every step "
        "| DPImageBench accuracy (%) | DPImageBench FID |",
        "|---" * 7 + "|",
    ]
    for (method, dataset, stated), published in DPIMAGEBENCH.items():
        if published.sound_epsilon is not None:
            worst = published.worst_record_epsilon
            rows.append(
                f"| {method} | {dataset} | {stated} | {published.sound_epsilon:,.0f} | "
                f"{'—' if worst is None else f'{worst:.2g}'} | {_number(published.accuracy)} | "
                f"{_number(published.fid)} |"
            )
    return rows


def _dataset_name(dataset_id: str) -> str:
    """A named dataset's id by its name: ``cifar10/train[...]`` → ``cifar10`` (a folder is named by its data)."""
    return dataset_id.split(",")[0].split("/")[0]


def _cell(column: str, details: dict[str, Any]) -> str:
    """The value ± spread (one decimal) of the metric that fills ``column``; where metrics share the column, what
    measured it and on how many samples against what; the side value its headline puts in brackets."""
    metric = filling(column, details)
    if metric is None:
        return "—"
    headline, result = metric.headline, MetricResult.from_dict(details[metric.name])
    cell = f"{result.value:.1f}" + (f" ± {result.std:.1f}" if result.std is not None else "")
    if headline.measured_by:
        protocol = result.protocol
        reference = protocol.get("reference_set") or f"{protocol['reference']:,} test images"
        cell += f" ({headline.measured_by}; {protocol['samples']:,} vs {reference})"
    beside = result.side_values.get(headline.beside)
    return cell + (f" [{beside:.1f}]" if beside is not None else "")


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:g}"
