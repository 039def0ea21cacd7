"""Metrics as declared specs (``zoo.release.metric_spec``) and results as ``MetricResult``: a spec must say whether
it reads the protected records, names are unique, publication fails closed, and every stored result reads back
entry for entry."""

import json
import subprocess
import sys

import pytest

from zoo.metrics.classifiers import CLASSIFIERS
from zoo.metrics.datasets import Evaluator, evaluators, register_evaluator
from zoo.release import metric_spec as declared_metrics
from zoo.release.evaluation_results import card_results
from zoo.release.layout import load_config
from zoo.release.metric_result import MetricResult
from zoo.release.metric_spec import Headline, Metric, UnknownMetricError, metric_spec, register_metric
from zoo.release.publication import UnpublishableMetricError, check_publishable
from zoo.release.registry import checkpoints_dir


def _computation(run, names):
    return {name: {"value": 1.0, "protocol": {"score": "constant"}} for name in names}


@pytest.fixture
def registry(monkeypatch):
    """The declared metrics, restored after the test."""
    monkeypatch.setattr(declared_metrics, "_METRICS", declared_metrics.registered_metrics())


def test_a_metric_must_say_whether_it_reads_protected_records():
    with pytest.raises(TypeError, match="reads_protected_records"):
        Metric(name="toy", compute={"images": _computation})
    with pytest.raises(TypeError, match="True or False"):
        Metric(name="toy", compute={"images": _computation}, reads_protected_records=None)
    with pytest.raises(ValueError, match="protected_because"):
        Metric(name="toy", compute={"images": _computation}, reads_protected_records=True)
    with pytest.raises(ValueError, match="at least one kind of data"):
        Metric(name="toy", compute={}, reads_protected_records=False)


def test_a_name_is_declared_once(registry):
    with pytest.raises(ValueError, match="'fid' is declared already"):
        register_metric(Metric(name="fid", compute={"images": _computation}, reads_protected_records=False))
    with pytest.raises(TypeError, match="register a Metric"):
        register_metric({"name": "toy"})
    with pytest.raises(UnknownMetricError, match="unknown metric 'sharpness'"):
        metric_spec("sharpness")


def test_a_dataset_has_one_evaluator():
    images = next(e for e in evaluators() if "mnist" in e.datasets)
    with pytest.raises(ValueError, match=r"registered already for \['mnist'\]"):
        register_evaluator(Evaluator(datasets=("toy-set", "mnist"), data="images", task_type="x", run=images.run))
    assert "toy-set" not in [d for e in evaluators() for d in e.datasets], "a refused evaluator registers nothing"


def test_publication_fails_closed(registry):
    check_publishable(["fid_lenet", "kid_lenet", "cas", "log_likelihood"])
    with pytest.raises(UnpublishableMetricError, match=r"\['sharpness'\] have none"):
        check_publishable(["fid", "sharpness"])
    reason = "it reads the model's training images"
    register_metric(
        Metric(
            name="toy_leak", compute={"images": _computation}, reads_protected_records=True, protected_because=reason
        )
    )
    with pytest.raises(UnpublishableMetricError, match=f"toy_leak: {reason}"):
        check_publishable(["fid", "toy_leak"])


def test_every_shipped_result_reads_back_unchanged():
    """config.json's results are the format: from_dict then to_dict gives each one back, entries in their order."""
    count = 0
    for path in sorted(checkpoints_dir().glob("*/config.json")):
        results = ((load_config(path.parent).get("evaluation") or {}).get("details") or {}).get("results") or {}
        for name, stored in results.items():
            result = MetricResult.from_dict(stored)
            assert result.to_dict() == stored and json.dumps(result.to_dict()) == json.dumps(stored), name
            assert result.value == stored["value"] and result.protocol == stored["protocol"]
            count += 1
    assert count > 100
    cas = MetricResult.from_dict({"value": 30.0, "std": 0.2, "runs": [29.8, 30.2], "protocol": {}, "real": 62.5})
    assert cas.std == 0.2 and cas.runs == (29.8, 30.2) and cas.side_values == {"real": 62.5}
    odd = {"value": 1, "std": None, "unit": 3, "protocol": {}, "roc": {"fpr": [0.0]}}
    assert MetricResult.from_dict(odd).to_dict() == odd and MetricResult.from_dict(odd).details["std"] is None
    with pytest.raises(ValueError, match="numeric value and a protocol"):
        MetricResult.from_dict({"value": 0.5})


def test_a_side_value_the_spec_names_gets_its_own_card_row():
    protocol = {"feature_extractor": "vgg16", "samples": 500, "reference": 500}
    evaluation = {"dataset": "cifar10", "results": {"prc": {"value": 0.61, "recall": 0.42, "protocol": protocol}}}
    precision, recall = card_results(evaluation, "cifar10", "image-generation")
    assert (precision["metric_type"], precision["metric_value"]) == ("prc", 0.61)
    assert (recall["metric_type"], recall["metric_value"]) == ("prc_recall", 0.42)
    assert "recall" not in precision["metric_config"] and recall["metric_name"] == "prc_recall (vgg16)"
    assert recall["metric_config"] == precision["metric_config"] == "; ".join(f"{k}={v}" for k, v in protocol.items())


def test_each_classifier_has_its_cas_metric_and_headlines_are_declared_in_table_order():
    declared = declared_metrics.registered_metrics()
    assert {f"cas_{c}" for c in CLASSIFIERS} <= set(declared)
    columns = [m.headline.column for m in declared.values() if m.headline]
    assert columns == ["CNN CAS", "ResNet-18 CAS", "set accuracy", "FID", "FID", "test log-likelihood", "anomaly AUROC"]
    assert isinstance(declared["fid_lenet"].headline, Headline) and declared["prc"].side_rows == ("recall",)


def test_the_specs_are_read_without_torch():
    """``dpzoo list`` and the tables read the specs; importing them must not cost torch's seconds."""
    probe = (
        "import sys\nfrom zoo.release.metric_spec import registered_metrics\nimport zoo.metrics\n"
        "assert 'fid' in registered_metrics() and zoo.metrics.METRICS\n"
        "print(sorted(m for m in ('torch', 'pytorch_lightning') if m in sys.modules))"
    )
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout == "[]\n"
