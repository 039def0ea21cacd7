"""The results table of MODEL_CARDS.md: every image checkpoint's measured CNN and ResNet CAS and FID, read from its
config.json, beside DPImageBench's published numbers for the same method, dataset and ε
(``zoo.release.literature``), with the protocol of each side. Generated, never copied by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zoo.release.layout import load_config
from zoo.release.literature import CAVEATS, DPIMAGEBENCH_PROTOCOL, DPIMAGEBENCH_SOURCE, dpimagebench

FID_METRICS = ("fid", "fid_lenet")


def results_table(folders: list[Path]) -> list[str]:
    """Markdown lines: a heading, the two protocols, and one row per evaluated image checkpoint with an ε."""
    rows = [
        "## Beside DPImageBench",
        "",
        f"Each evaluated image checkpoint with an (ε, δ) guarantee, beside {DPIMAGEBENCH_SOURCE} for the same "
        "method, dataset and ε (— where it publishes none). The protocols differ, so read the columns side by "
        f"side, not as one ranking. {DPIMAGEBENCH_PROTOCOL}.",
        "",
        "| model | data | ε | CNN CAS (%) | ResNet-18 CAS (%) [real data] | FID (extractor; samples vs reference) | "
        "DPImageBench accuracy (%) | DPImageBench FID | note |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    caveats = []
    for folder in folders:
        config = load_config(folder)
        headline = config.get("headline") or {}
        details = ((config.get("evaluation") or {}).get("details") or {}).get("results") or {}
        if headline.get("epsilon") is None or not _is_image_evaluation(details):
            continue
        dataset = (config.get("data") or {}).get("name") or _dataset_name(headline["dataset"])
        published = dpimagebench(headline["method"], dataset, headline["epsilon"])
        rows.append(
            f"| [{folder.name}](checkpoints/{folder.name}/README.md) | {dataset} | {headline['epsilon']:g} | "
            f"{_cas(details.get('cas_cnn'))} | {_resnet_cas(details.get('cas_resnet'))} | {_fid(details)} | "
            f"{_number(published.accuracy) if published else '—'} | {_number(published.fid) if published else '—'} | "
            f"{published.caveat if published else ''} |"
        )
        caveats += [published.caveat] if published and published.caveat else []
    return rows + ["", *(f"*{caveat}*: {CAVEATS[caveat]}." for caveat in dict.fromkeys(caveats))]


def _is_image_evaluation(details: dict[str, Any]) -> bool:
    return "cas_cnn" in details or any(name in details for name in FID_METRICS)


def _dataset_name(dataset_id: str) -> str:
    """A named dataset's id by its name: ``cifar10/train[...]`` → ``cifar10`` (a folder is named by its data)."""
    return dataset_id.split(",")[0].split("/")[0]


def _cas(result: dict[str, Any] | None) -> str:
    return "—" if result is None else f"{result['value']:.1f} ± {result.get('std', 0):.1f}"


def _resnet_cas(result: dict[str, Any] | None) -> str:
    """The ResNet's CAS, with the accuracy real images of the same count reach under its protocol."""
    real = (result or {}).get("real_data_accuracy")
    return _cas(result) + (f" [{real:.1f}]" if real is not None else "")


def _fid(details: dict[str, Any]) -> str:
    for name in FID_METRICS:
        if name in details:
            protocol = details[name]["protocol"]
            extractor = "Inception" if name == "fid" else "LeNet"
            reference = protocol.get("reference_set") or f"{protocol['reference']:,} test images"
            return f"{details[name]['value']:.1f} ({extractor}; {protocol['samples']:,} vs {reference})"
    return "—"


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:g}"
