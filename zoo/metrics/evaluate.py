"""``zoo.evaluate``: one call for the quality of a private generator, and how much it leaks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zoo.data.images import IMAGE_DATASETS, load_images
from zoo.data.tables import TABLES
from zoo.metrics.audit import membership_audit
from zoo.metrics.cas import classifier_accuracy_on_synthetic
from zoo.metrics.classifiers import CLASSIFIERS
from zoo.metrics.density import heldout_log_likelihood, ood_auroc
from zoo.metrics.fidelity import FIDELITY_METRICS, fidelity_metrics
from zoo.metrics.table_evaluate import TABLE_METRICS, evaluate_table

CAS_METRICS = ("cas", *(f"cas_{c}" for c in CLASSIFIERS))
DENSITY_METRICS = {"ood_auroc": ood_auroc, "log_likelihood": heldout_log_likelihood}
IMAGE_METRICS = (*FIDELITY_METRICS, *CAS_METRICS, *DENSITY_METRICS, "audit")
METRICS = tuple(dict.fromkeys((*IMAGE_METRICS, *TABLE_METRICS)))


def evaluate(
    model_or_id: Any,
    dataset: str,
    metrics: tuple[str, ...] = ("fid_lenet", "cas"),
    num_samples: int | None = None,
    seed: int = 0,
    runs: int = 5,
    epochs: int = 10,
    feature_extractor_weights_path: str | None = None,
    progress: bool = True,
    label: int | None = None,
    audit_size: int = 2000,
    split: int = 0,
) -> dict[str, Any]:
    """Evaluate a generator against the real ``dataset``; returns values, spreads and protocols.

    ``num_samples`` defaults to 10,000 for images and the training rows' count for tables.
    ``cas`` stands for the three classifiers of DP-LFlow appendix E.4 (LR, MLP, CNN);
    ``cas_resnet`` adds a timm ResNet-18 trained from scratch. torch-fidelity metrics compare
    ``num_samples`` samples with the real test split; ``fid`` needs Inception weights
    (downloaded by torch-fidelity, or ``feature_extractor_weights_path``), ``fid_lenet`` uses
    dpzoo's small extractor and is reported under that name. ``ood_auroc`` and
    ``log_likelihood`` need models with ``log_prob``. ``label`` restricts the real data to one
    class (for a model of one class). All of these read only samples and the test split, so a
    card may publish them. ``audit`` attacks the model with ``audit_size`` members of the
    training split it saw and as many held-out images (the validation split): it reads the
    protected records, so it is a local diagnostic that no card publishes
    (``zoo.metrics.publication``).

    For a table (``lifesci``, ``gaussians``, ``half_moons``, ``pinwheel``) the metrics are those
    of ``zoo.metrics.table_evaluate`` on the test rows of ``split``.
    """
    from zoo.loading import load

    if dataset not in (*IMAGE_DATASETS, *TABLES):
        raise ValueError(f"unknown dataset {dataset!r}; known: {sorted(IMAGE_DATASETS)} and tables {list(TABLES)}")
    known = TABLE_METRICS if dataset in TABLES else IMAGE_METRICS
    unknown = [m for m in metrics if m not in known]
    if unknown:
        raise ValueError(f"unknown metrics for {dataset} {unknown}; known: {list(known)}")
    model = load(model_or_id) if isinstance(model_or_id, (str, Path)) else model_or_id
    if dataset in TABLES:
        return evaluate_table(model, dataset, metrics, num_samples, seed, split, progress=progress)
    num_samples = num_samples or 10_000
    classifiers = tuple(dict.fromkeys(c for m in metrics if m.startswith("cas") for c in _classifiers(m)))
    if classifiers and model.num_classes is None:
        raise ValueError(f"CAS needs labelled samples, but {model.method} is unconditional; drop the cas metrics")
    if classifiers and label is not None:
        raise ValueError("CAS needs every class: drop label or the cas metrics")
    results: dict[str, Any] = {
        name: DENSITY_METRICS[name](model, dataset, label) for name in metrics if name in DENSITY_METRICS
    }
    if "audit" in metrics:
        results["audit"] = _audit(model, dataset, label, audit_size, seed)
    fidelity = tuple(m for m in metrics if m in FIDELITY_METRICS)
    if fidelity or classifiers:
        samples = model.sample(num_samples, seed=seed, progress=progress)
    if fidelity:
        reference, reference_labels = load_images(dataset, train=False)
        if label is not None:
            reference = reference[reference_labels == label]
        results.update(fidelity_metrics(samples, reference, fidelity, dataset, feature_extractor_weights_path))
    if classifiers:
        results.update(
            classifier_accuracy_on_synthetic(
                model, dataset, classifiers, num_samples, runs, epochs, seed, samples=samples
            )
        )
    return {"dataset": dataset, "label": label, "num_samples": num_samples, "seed": seed, "results": results}


def _audit(model: Any, dataset: str, label: int | None, size: int, seed: int) -> dict[str, Any]:
    """Rebuild the split the model was trained on from its ledger's dataset id, and attack it."""
    from zoo.data import ImageDataModule

    data = ImageDataModule(dataset, label=label)
    entries = getattr(model, "privacy_ledger", None)
    trained_on = {name for e in (entries.entries if entries else []) for name in (e.dataset_id, e.partition_of)}
    if data.dataset_id not in trained_on:
        raise ValueError(
            f"the audit rebuilds the member split {data.dataset_id}, but the model's ledger names "
            f"{sorted(n for n in trained_on if n)}"
        )
    data.setup()
    members = tuple(t[:size] for t in data.train_set.tensors)
    non_members = tuple(t[:size] for t in data.validation_set.tensors)
    report = membership_audit(model, members, non_members, num_samples=size, seed=seed)
    nearest = report["nearest_neighbour"]
    return {"value": nearest["auroc"], "tpr_at_1pct_fpr": nearest["tpr_at_1pct_fpr"], **report}


def _classifiers(metric: str) -> tuple[str, ...]:
    return ("lr", "mlp", "cnn") if metric == "cas" else (metric.removeprefix("cas_"),)


def evaluator_of(result: dict[str, Any]) -> str:
    """What produced a result: the feature extractor, classifier, score or attack."""
    protocol = result["protocol"]
    for key in ("feature_extractor", "classifier", "score"):
        if protocol.get(key):
            return str(protocol[key])
    return "nearest-neighbour membership attack" if "nearest_neighbour" in result else "log_prob"


def _side_numbers(result: dict[str, Any]) -> dict[str, float]:
    """Numbers measured next to the headline value (a reference score, rates), rounded for the card."""
    return {k: round(v, 4) for k, v in result.items() if isinstance(v, float) and k not in ("value", "std")}


def card_results(evaluation: dict[str, Any], dataset_name: str) -> list[dict[str, Any]]:
    """``model-index`` entries for a card, each naming its evaluator."""
    entries = []
    for name, result in evaluation["results"].items():
        protocol = result["protocol"]
        evaluator = evaluator_of(result)
        spread = f" ± {result['std']:.2f}" if "std" in result else ""
        entries.append(
            {
                "task_type": "density-estimation" if evaluation["dataset"] in TABLES else "image-generation",
                "dataset_type": evaluation["dataset"],
                "dataset_name": dataset_name,
                "metric_type": name,
                "metric_name": f"{name} ({evaluator}){spread}",
                "metric_value": round(result["value"], 3),
                "metric_config": "; ".join(
                    f"{k}={v}"
                    for k, v in {"unit": result.get("unit"), **_side_numbers(result), **protocol}.items()
                    if v is not None
                ),
            }
        )
    return entries
