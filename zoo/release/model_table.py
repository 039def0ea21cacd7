"""The model table of README.md and docs/models.md, generated from the shipped checkpoints' config.json files,
never copied by hand; the guarantee in the words of ``zoo.headline.stated_guarantee``, as ``dpzoo list`` states it.

    python -m zoo.release.model_table            # rewrite the table blocks of README.md and docs/models.md
    python -m zoo.release.model_table --check    # exit 1 if either is out of date

Each row: the model id (README: linked to its card, ``checkpoints/<id>/README.md``; docs: linked to its method's
page, since a docs page may only link inside docs/), the method, the private data, the guarantee as the card
headlines it ((ε, δ), a PAC bound, or none for a model of public data only) and the headline numbers its card
measured, each with the extractor or classifier that measured it.
"""

from __future__ import annotations

import argparse
import functools
import re
import sys
from pathlib import Path
from typing import Any

from zoo.headline import stated_guarantee
from zoo.methods import docs_page
from zoo.release.layout import load_config
from zoo.release.metric_result import MetricResult
from zoo.release.metric_spec import Headline, registered_metrics

ROOT = Path(__file__).resolve().parents[2]
START, END = "<!-- model-table:start -->", "<!-- model-table:end -->"

#: the method pages, ``docs/methods/<page>.md``
METHOD_PAGES = ROOT / "docs" / "methods"


def load_configs(checkpoints: Path) -> list[dict[str, Any]]:
    """Every ``checkpoints/<id>/config.json``, in table order."""
    configs = [load_config(path.parent) for path in sorted(checkpoints.glob("*/config.json"))]
    return sorted(configs, key=_order)


def method_key(config: dict[str, Any]) -> str:
    """``dp-merf``, …; a per-class model is named by its base method."""
    method = config["method"]
    if method == "per-class":
        method = (config.get("architecture") or {}).get("base_method", method)
    return str(method)


def method_page(config: dict[str, Any]) -> str:
    """The docs page of the model's method (``zoo.methods.docs_page``), refused when docs/methods/ lacks it: a row
    links the page that says how its model was trained, never a stand-in."""
    page = docs_page(method_key(config))
    if not (METHOD_PAGES / f"{page}.md").is_file():
        raise FileNotFoundError(f"{config['model_id']}: its method's page {METHOD_PAGES / page}.md does not exist")
    return page


@functools.cache
def method_order() -> list[str]:
    """The method pages in the order the docs' navigation lists them (mkdocs.yml): the table's order of methods."""
    return list(dict.fromkeys(re.findall(r"\bmethods/([\w-]+)\.md\b", (ROOT / "mkdocs.yml").read_text())))


def _order(config: dict[str, Any]) -> tuple:
    """Methods in the docs' order (a page missing from the navigation last), then data, then ε."""
    page, order = method_page(config), method_order()
    headline = config.get("headline") or {}
    epsilon = headline.get("epsilon")
    return (
        order.index(page) if page in order else len(order),
        data_name(config),
        -1.0 if epsilon is None else epsilon,
        config["model_id"],
    )


def data_name(config: dict[str, Any]) -> str:
    """The private data's name (``mnist``, a folder's name), public data after it: ``… (+ public: name)``."""
    dataset = (config.get("headline") or {}).get("dataset") or ""
    private, public = [], []
    for part in dataset.split(", "):
        name = part.split("/")[0].split("@")[0]
        (public if part.endswith("(public)") else private).append(name)
    names = ", ".join(private) if private else "public data only: " + ", ".join(public)
    return names + (f" (+ public: {', '.join(public)})" if private and public else "")


def _results(config: dict[str, Any]) -> dict[str, Any]:
    return (((config.get("evaluation") or {}).get("details") or {}).get("results")) or {}


def headline_numbers(config: dict[str, Any]) -> str:
    """The card's headline measurements, in the order their metrics are declared (``zoo.metrics.specs``): each
    metric with a headline that the card measured, under its column's words, FID with its extractor and sample
    count."""
    results = _results(config)
    parts = [
        _headline_part(metric.headline, MetricResult.from_dict(results[name]))
        for name, metric in registered_metrics().items()
        if metric.headline and name in results and not any(other in results for other in metric.headline.unless)
    ]
    return "; ".join(parts) or "not evaluated"


def _headline_part(headline: Headline, result: MetricResult) -> str:
    number = format(result.value, headline.digits)
    if result.std is not None:
        number += f" ± {format(result.std, headline.digits)}"
    if not headline.measured_by:
        return f"{headline.column} {number}"
    samples = result.protocol.get("samples")
    count = f", {samples:,} samples" if isinstance(samples, int) else ""
    return f"{headline.column} {number} ({headline.measured_by}{count})"


def table(configs: list[dict[str, Any]], link: str) -> list[str]:
    """Markdown lines of the table. ``link``: ``"card"`` (README: ``checkpoints/<id>/README.md``) or ``"docs"``
    (docs/models.md: the method's page)."""
    lines = ["| model | method | data | guarantee | headline numbers |", "|---|---|---|---|---|"]
    for config in configs:
        model_id = config["model_id"]
        target = f"checkpoints/{model_id}/README.md" if link == "card" else f"methods/{method_page(config)}.md"
        method = (config.get("headline") or {}).get("method") or method_key(config)
        lines.append(
            f"| [{model_id}]({target}) | {method} | {data_name(config)} | {stated_guarantee(config['headline'])} | "
            f"{headline_numbers(config)} |"
        )
    return lines


def replace_block(text: str, lines: list[str], source: str) -> str:
    """``text`` with the lines between the start and end markers replaced."""
    if START not in text or END not in text:
        raise ValueError(f"{source} has no {START} … {END} block")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    note = (
        "<!-- generated by `python -m zoo.release.model_table` from checkpoints/*/config.json; do not edit by hand -->"
    )
    return head + START + "\n" + note + "\n" + "\n".join(lines) + "\n" + END + tail


def targets(root: Path = ROOT) -> dict[Path, str]:
    """Each file holding the table → the up-to-date text of that file."""
    configs = load_configs(root / "checkpoints")
    out = {}
    for path, link in ((root / "README.md", "card"), (root / "docs" / "models.md", "docs")):
        out[path] = replace_block(path.read_text(), table(configs, link), str(path))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m zoo.release.model_table", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if README.md or docs/models.md is out of date")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this checkout)")
    args = parser.parse_args(argv)
    stale = []
    for path, text in targets(args.root).items():
        if path.read_text() != text:
            stale.append(path)
            if not args.check:
                path.write_text(text)
    if args.check and stale:
        print(f"out of date: {', '.join(map(str, stale))}; run `python -m zoo.release.model_table`", file=sys.stderr)
        return 1
    for path in stale:
        print(f"rewrote the model table of {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
