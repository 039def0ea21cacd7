"""``zoo.evaluate``: one call for the quality of a private generator, and how much it leaks.

Each family of datasets registers its evaluation (``zoo.metrics.datasets``): images in
``image_evaluate``, tables in ``table_evaluate``; each metric is declared once (``zoo.metrics.specs``). This module
dispatches and names none; it imports no torch, so that ``zoo.metrics`` can be read without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.errors import UserError
from zoo.metrics.datasets import evaluator_for, known_metrics

if TYPE_CHECKING:
    import torch

    from zoo.methods import DPGenerativeModel

METRICS = known_metrics()


def evaluate(
    model_or_id: DPGenerativeModel | str | Path,
    dataset: str,
    metrics: tuple[str, ...] | None = None,
    num_samples: int | None = None,
    seed: int = 0,
    progress: bool = True,
    figures: bool = False,
    device: str | torch.device | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Evaluate a generator against the real ``dataset``; returns values, spreads and protocols.

    Images (``mnist``, ``fashion_mnist``, ``cifar10``, or the path of an image folder; ``zoo.metrics.image_evaluate``),
    against the protocol of option ``reference`` (``zoo.metrics.reference``): ``"test"`` by default (a named
    dataset's test split, a folder's ``test/`` part or the held-out part its model recorded), a folder of
    held-out images, or ``"train"`` for a named dataset (the field's FID protocol; a local diagnostic that
    no card publishes, since the zoo's models protect those images): ``fid``, ``kid``,
    ``isc``, ``prc`` (torch-fidelity's Inception; offline pass ``feature_extractor_weights_path``),
    ``fid_lenet``, ``kid_lenet``, ``isc_lenet`` (dpzoo's small extractor, reported under those
    names), ``cas`` (LR, MLP, CNN of DP-LFlow appendix E.4; ``cas_resnet`` a timm ResNet-18),
    for a model that releases a set ``set_accuracy`` (Private Set Generation's ConvNet trained on the
    set), ``privacy_score_lenet`` (P3DM's privacy score: nearest test image in the LeNet's features,
    fraction with another predicted class), and for density models ``ood_auroc`` and ``log_likelihood``;
    options ``runs``, ``epochs``, ``label`` (compare with one class), ``audit_size``, ``reference``.
    ``metrics`` defaults to ``("fid_lenet", "cas")`` for the named datasets and ``("fid", "cas")`` for
    a folder (the LeNet metrics exist only for the named ones); ``num_samples`` to 10,000.

    Tables (``lifesci``, ``gaussians``, ``half_moons``, ``pinwheel``; ``zoo.metrics.table_evaluate``):
    ``log_likelihood``, ``knn_mse``, ``anomaly_auroc`` on the test rows of option ``split``;
    ``num_samples`` defaults to the training rows' count.

    All of these read only the model, its samples and data outside the protected records, so a
    card may publish them. ``audit``, ``dp_mog`` and ``dp_ad`` read the protected records: local
    diagnostics that no card publishes (``zoo.metrics.publication``). ``figures`` adds the
    family's pictures (PIL images, under ``"figures"``) for ``record_evaluation`` to store.

    ``device`` (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"`` or a ``torch.device``) is where the evaluation runs:
    the model is loaded or moved there (a given model is moved in place, as ``nn.Module.to`` does), and it
    samples, and the classifiers and feature passes run, where the model is. None: the model where it is, a
    model loaded by id on the CPU. A device this machine lacks is refused before any work.
    """
    from zoo.release.loading import checked_device, load

    target = None if device is None else checked_device(device)
    if num_samples is not None and (
        isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1
    ):
        raise UserError(f"num_samples must be a positive integer (or None for the default), got {num_samples!r}")
    dataset = str(dataset)
    evaluator = evaluator_for(dataset)
    if metrics is None:
        if evaluator.default_metrics is None:
            raise UserError(f"name the metrics to compute for {dataset}; known: {', '.join(evaluator.metrics)}")
        metrics = evaluator.default_metrics(dataset)
    unknown = [m for m in metrics if m not in evaluator.metrics]
    if unknown:
        raise UserError(f"unknown metrics for {dataset}: {', '.join(unknown)}; known: {', '.join(evaluator.metrics)}")
    foreign = sorted(set(options) - set(evaluator.options))
    if foreign:
        raise UserError(
            f"options {', '.join(foreign)} do not apply to {dataset}; its options: {', '.join(evaluator.options)}"
        )
    if isinstance(model_or_id, (str, Path)):
        model = load(model_or_id, device=target)
    else:
        model = model_or_id if target is None else model_or_id.to(target)
    return evaluator.run(model, dataset, tuple(metrics), num_samples, seed, progress, figures, **options)
