"""``zoo.evaluate``: one call for the quality of a private generator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zoo.data.images import IMAGE_DATASETS, load_images
from zoo.metrics.cas import classifier_accuracy_on_synthetic
from zoo.metrics.classifiers import CLASSIFIERS
from zoo.metrics.density import heldout_log_likelihood, ood_auroc
from zoo.metrics.fidelity import FIDELITY_METRICS, fidelity_metrics

CAS_METRICS = ("cas", *(f"cas_{c}" for c in CLASSIFIERS))
DENSITY_METRICS = {"ood_auroc": ood_auroc, "log_likelihood": heldout_log_likelihood}
METRICS = (*FIDELITY_METRICS, *CAS_METRICS, *DENSITY_METRICS)


def evaluate(
    model_or_id: Any,
    dataset: str,
    metrics: tuple[str, ...] = ("fid_lenet", "cas"),
    num_samples: int = 10_000,
    seed: int = 0,
    runs: int = 5,
    epochs: int = 10,
    feature_extractor_weights_path: str | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Evaluate a generator against the real ``dataset``; returns values, spreads and protocols.

    ``cas`` stands for the three classifiers of DP-LFlow appendix E.4 (LR, MLP, CNN);
    ``cas_resnet`` adds a timm ResNet-18 trained from scratch. torch-fidelity metrics compare
    ``num_samples`` samples with the real test split; ``fid`` needs Inception weights
    (downloaded by torch-fidelity, or ``feature_extractor_weights_path``), ``fid_lenet`` uses
    dpzoo's small extractor and is reported under that name. ``ood_auroc`` and
    ``log_likelihood`` need models with ``log_prob``.
    """
    from zoo.loading import load

    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise ValueError(f"unknown metrics {unknown}; known: {list(METRICS)}")
    if dataset not in IMAGE_DATASETS:
        raise ValueError(f"unknown dataset {dataset!r}; known: {sorted(IMAGE_DATASETS)}")
    model = load(model_or_id) if isinstance(model_or_id, (str, Path)) else model_or_id
    classifiers = tuple(dict.fromkeys(c for m in metrics if m.startswith("cas") for c in _classifiers(m)))
    if classifiers and model.num_classes is None:
        raise ValueError(f"CAS needs labelled samples, but {model.method} is unconditional; drop the cas metrics")
    results: dict[str, Any] = {
        name: DENSITY_METRICS[name](model, dataset) for name in metrics if name in DENSITY_METRICS
    }
    if not any(m in FIDELITY_METRICS or m.startswith("cas") for m in metrics):
        return {"dataset": dataset, "num_samples": 0, "seed": seed, "results": results}
    samples = model.sample(num_samples, seed=seed, progress=progress)
    fidelity = tuple(m for m in metrics if m in FIDELITY_METRICS)
    if fidelity:
        reference, _ = load_images(dataset, train=False)
        results.update(
            fidelity_metrics(samples, reference, fidelity, dataset, feature_extractor_weights_path, progress)
        )
    if classifiers:
        results.update(
            classifier_accuracy_on_synthetic(
                model, dataset, classifiers, num_samples, runs, epochs, seed, samples=samples
            )
        )
    return {"dataset": dataset, "num_samples": num_samples, "seed": seed, "results": results}


def _classifiers(metric: str) -> tuple[str, ...]:
    return ("lr", "mlp", "cnn") if metric == "cas" else (metric.removeprefix("cas_"),)


def card_results(evaluation: dict[str, Any], dataset_name: str) -> list[dict[str, Any]]:
    """``model-index`` entries for a card, each naming its evaluator."""
    entries = []
    for name, result in evaluation["results"].items():
        protocol = result["protocol"]
        evaluator = protocol.get("feature_extractor") or protocol.get("classifier") or protocol.get("score") or "-"
        spread = f" ± {result['std']:.2f}" if "std" in result else ""
        entries.append(
            {
                "task_type": "image-generation",
                "dataset_type": evaluation["dataset"],
                "dataset_name": dataset_name,
                "metric_type": name,
                "metric_name": f"{name} ({evaluator}){spread}",
                "metric_value": round(result["value"], 3),
                "metric_config": "; ".join(f"{k}={v}" for k, v in protocol.items() if v is not None),
            }
        )
    return entries
