"""Every metric dpzoo ships, each declared once (``zoo.release.metric_spec.Metric``): the data it applies to and
its computation there, what it needs, whether it reads the protected records (and why), its headline column and
the side values a card shows on rows of their own. Evaluation, publication, cards, ``dpzoo list`` and the tables
read these and name no metric. The order of declaration is the order of the tables' headline numbers.

Torch-free: the computations (``image_computations``, ``table_computations``) import their machinery when they run.
"""

from __future__ import annotations

from zoo.metrics import image_computations as images
from zoo.metrics import table_computations as tables
from zoo.release.metric_spec import Headline, Metric, register_metric

_CAS = {"compute": {"images": images.cas}, "reads_protected_records": False, "needs_labels": True}
_FIDELITY = {"compute": {"images": images.fidelity}, "reads_protected_records": False}
_LENET = {**_FIDELITY, "refuses_dataset": images.lenet_only}

SHIPPED = (
    Metric(name="cas", **_CAS),
    Metric(name="cas_lr", **_CAS),
    Metric(name="cas_mlp", **_CAS),
    Metric(name="cas_cnn", **_CAS, headline=Headline(column="CNN CAS", digits=".2f")),
    Metric(
        name="cas_resnet", **_CAS, headline=Headline(column="ResNet-18 CAS", digits=".2f", beside="real_data_accuracy")
    ),
    Metric(
        name="set_accuracy",
        compute={"images": images.set_accuracy},
        reads_protected_records=False,
        needs_labels=True,
        headline=Headline(column="set accuracy", digits=".2f"),
    ),
    Metric(name="fid", **_FIDELITY, headline=Headline(column="FID", measured_by="Inception")),
    Metric(name="kid", **_FIDELITY),
    Metric(name="isc", **_FIDELITY),
    Metric(name="prc", **_FIDELITY, side_rows=("recall",)),
    Metric(name="closeness", compute={"images": images.closeness}, reads_protected_records=False),
    Metric(name="fid_lenet", **_LENET, headline=Headline(column="FID", measured_by="LeNet")),
    Metric(name="kid_lenet", **_LENET),
    Metric(name="isc_lenet", **_LENET),
    Metric(
        name="ood_auroc",
        compute={"images": images.ood_auroc},
        reads_protected_records=False,
        needs_labels=True,
        needs_density=True,
    ),
    Metric(
        name="log_likelihood",
        compute={"images": images.log_likelihood, "table": tables.log_likelihood},
        reads_protected_records=False,
        needs_density=True,
        headline=Headline(column="test log-likelihood", digits=".3g", unless=("cas_cnn",)),
    ),
    Metric(
        name="privacy_score_lenet",
        compute={"images": images.privacy_score_lenet},
        reads_protected_records=False,
        refuses_dataset=images.lenet_only,
    ),
    Metric(
        name="audit",
        compute={"images": images.audit},
        reads_protected_records=True,
        protected_because="the membership attack scores the model's own training images (the members), so its "
        "AUROC is a statistic of the protected records",
        refuses_dataset=images.named_only,
    ),
    Metric(name="knn_mse", compute={"table": tables.knn_mse}, reads_protected_records=False),
    Metric(
        name="anomaly_auroc",
        compute={"table": tables.anomaly_auroc},
        reads_protected_records=False,
        needs_density=True,
        headline=Headline(column="anomaly AUROC", digits=".3f"),
    ),
    Metric(
        name="dp_mog",
        compute={"table": tables.dp_mog},
        reads_protected_records=True,
        protected_because="DP-EM is fitted on the model's training rows at the model's own ε: a second release of "
        "those rows that the model's ledger does not hold (composed, the card's ε would no longer be true)",
    ),
    Metric(
        name="dp_ad",
        compute={"table": tables.dp_ad},
        reads_protected_records=True,
        protected_because="its voters are flows trained without DP on the model's training rows; the released "
        "labels cost ε per query, outside the model's ledger",
    ),
)

for _metric in SHIPPED:
    register_metric(_metric)
