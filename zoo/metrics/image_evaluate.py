"""Evaluation of image generators against MNIST or Fashion-MNIST (registered with ``zoo.metrics.datasets``)."""

from __future__ import annotations

from typing import Any

from zoo.data.images import IMAGE_DATASETS, load_images
from zoo.metrics.audit import membership_audit
from zoo.metrics.cas import classifier_accuracy_on_synthetic
from zoo.metrics.classifiers import CLASSIFIERS
from zoo.metrics.datasets import Evaluator, register_evaluator
from zoo.metrics.density import heldout_log_likelihood, ood_auroc
from zoo.metrics.fidelity import FIDELITY_METRICS, fidelity_metrics
from zoo.metrics.privacy_score import privacy_score_lenet
from zoo.metrics.set_accuracy import set_accuracy

CAS_METRICS = ("cas", *(f"cas_{c}" for c in CLASSIFIERS))
DENSITY_METRICS = {"ood_auroc": ood_auroc, "log_likelihood": heldout_log_likelihood}
IMAGE_METRICS = (*FIDELITY_METRICS, *CAS_METRICS, "set_accuracy", *DENSITY_METRICS, "privacy_score_lenet", "audit")


def evaluate_images(
    model: Any,
    dataset: str,
    metrics: tuple[str, ...],
    num_samples: int | None = None,
    seed: int = 0,
    progress: bool = True,
    figures: bool = False,
    runs: int = 5,
    epochs: int = 10,
    feature_extractor_weights_path: str | None = None,
    label: int | None = None,
    audit_size: int = 2000,
) -> dict[str, Any]:
    """torch-fidelity metrics, CAS and the P3DM privacy score on ``num_samples`` samples (default
    10,000) against the test split, densities of the test split, and the membership audit (a local
    diagnostic); see ``zoo.evaluate``. ``figures`` is part of the evaluator interface; images add none
    (samples.png shows them)."""
    num_samples = num_samples or 10_000
    classifiers = tuple(dict.fromkeys(c for m in metrics if m.startswith("cas") for c in _classifiers(m)))
    if classifiers and model.num_classes is None:
        raise ValueError(f"CAS needs labelled samples, but {model.method} is unconditional; drop the cas metrics")
    if classifiers and label is not None:
        raise ValueError("CAS needs every class: drop label or the cas metrics")
    results: dict[str, Any] = {
        name: DENSITY_METRICS[name](model, dataset, label) for name in metrics if name in DENSITY_METRICS
    }
    if "set_accuracy" in metrics:
        if label is not None:
            raise ValueError("set_accuracy needs every class: drop label or set_accuracy")
        results["set_accuracy"] = set_accuracy(model, dataset, runs, seed)
    if "audit" in metrics:
        results["audit"] = _audit(model, dataset, label, audit_size, seed)
    fidelity = tuple(m for m in metrics if m in FIDELITY_METRICS)
    privacy = "privacy_score_lenet" in metrics
    if fidelity or classifiers or privacy:
        samples = model.sample(num_samples, seed=seed, progress=progress)
    if privacy:  # every class of the test split, even with label: the attribute is the class
        results["privacy_score_lenet"] = privacy_score_lenet(samples, dataset)
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


register_evaluator(
    Evaluator(
        datasets=tuple(IMAGE_DATASETS),
        metrics=IMAGE_METRICS,
        task_type="image-generation",
        run=evaluate_images,
        options=("runs", "epochs", "feature_extractor_weights_path", "label", "audit_size"),
    )
)
