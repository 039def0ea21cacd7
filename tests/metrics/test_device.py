"""Evaluation on the device it is given: ``zoo.evaluate`` checks it before any work and hands it to sampling, the
CAS classifiers and the feature passes, which run in float32 (TF32 off) and name the device in their protocol.
On the CPU: a meta network stands in for one on a GPU (it computes shapes only), and CUDA is mocked where a test
needs to say it is absent."""

import pytest
import torch
import torch_fidelity

from tests.metrics.test_cas import Replay
from zoo.errors import UserError
from zoo.metrics import evaluate, fidelity_metrics
from zoo.metrics.classifiers import build_network, fit, train_and_test
from zoo.metrics.feature_pass import device_label, feature_device, feature_pass, without_tf32


def tf32() -> tuple[bool, bool]:
    return torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32


def set_tf32(matmul: bool, cudnn: bool) -> None:
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn


@pytest.fixture
def tf32_on():
    """TF32 allowed for matmuls and convolutions, the flags put back after the test (monkeypatch cannot: the
    matmul flag is not an attribute of its module object)."""
    before = tf32()
    set_tf32(True, True)
    yield
    set_tf32(*before)


def test_without_tf32_turns_both_flags_off_and_restores_them(tf32_on):
    with without_tf32():
        assert tf32() == (False, False)
    assert tf32() == (True, True)
    with pytest.raises(RuntimeError), without_tf32():
        raise RuntimeError("a failed pass")
    assert tf32() == (True, True)
    set_tf32(True, False)
    with without_tf32():
        pass
    assert tf32() == (True, False)


def test_features_are_computed_on_cuda_or_else_the_cpu():
    assert feature_device("cuda:1") == torch.device("cuda:1")
    assert feature_device("mps") == feature_device("cpu") == torch.device("cpu")
    assert device_label(torch.device("cuda:1")) == "cuda:1, float32 (TF32 off)"
    assert device_label(torch.device("cpu")) == "cpu, float32"
    with feature_pass(torch.device("cpu")) as cuda:
        assert cuda is False


def test_the_lenet_feature_pass_runs_without_tf32_and_its_protocol_names_the_device(tf32_on, monkeypatch):
    seen = {}

    def calculate_metrics(**kwargs):
        seen.update(tf32=tf32(), cuda=kwargs["cuda"])
        return {
            "frechet_inception_distance": 1.0,
            "kernel_inception_distance_mean": 0.1,
            "kernel_inception_distance_std": 0.0,
        }

    monkeypatch.setattr(torch_fidelity, "calculate_metrics", calculate_metrics)
    images = torch.rand(20, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    results = fidelity_metrics(images, images, ("fid_lenet",), "mnist", device="cpu")
    assert seen == {"tf32": (False, False), "cuda": False} and tf32() == (True, True)
    assert results["fid_lenet"]["protocol"]["device"] == "cpu, float32"
    assert results["kid_lenet"]["protocol"]["device"] == "cpu, float32"


def test_the_lenet_fid_protocol_names_the_device_its_features_came_from():
    images = torch.rand(40, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    result = fidelity_metrics(images[:20], images[20:], ("fid_lenet",), "mnist", device="cpu")["fid_lenet"]
    assert result["protocol"]["device"] == "cpu, float32" and result["value"] >= 0


def test_a_classifier_trains_on_the_networks_device():
    """``fit`` moves each batch (augmented on the CPU) to where the network is: a meta network runs, shapes only."""
    network = build_network("cnn", (3, 8, 8), 3).to("meta")
    train = (torch.rand(10, 3, 8, 8), torch.arange(10) % 3)
    fit(network, torch.optim.Adam(network.parameters()), train, 1, 4, "meta CNN", augment=True)
    assert next(network.parameters()).device.type == "meta"
    on_cpu = train_and_test("cnn", train, train, 3, seed=0, epochs=1, device="cpu")
    assert on_cpu == train_and_test("cnn", train, train, 3, seed=0, epochs=1)


def test_evaluate_refuses_a_missing_device_before_any_work(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr("zoo.release.loading.resolve", lambda *args: pytest.fail("the model was looked up"))
    with pytest.raises(UserError, match="needs CUDA, but this machine has none"):
        evaluate("some-model-id", "mnist", metrics=("cas_cnn",), device="cuda")


def test_evaluate_puts_the_model_on_its_device_and_hands_that_device_to_the_classifiers_and_features(
    data_dir, monkeypatch
):
    from zoo.metrics import cas, fidelity

    model = Replay(torch.rand(30, 1, 28, 28), torch.arange(30) % 10)
    moved, given = [], {}
    to = model.to

    def recording_to(device):
        moved.append(device)
        return to(device)

    def measure(name):
        def recorded(*args, device, **kwargs):
            given[name] = device
            return {}

        return recorded

    monkeypatch.setattr(model, "to", recording_to)
    monkeypatch.setattr(fidelity, "fidelity_metrics", measure("features"))
    monkeypatch.setattr(cas, "classifier_accuracy_on_synthetic", measure("classifiers"))
    evaluate(model, "mnist", metrics=("fid_lenet", "cas_cnn"), num_samples=20, device="cpu", progress=False)
    assert moved == [torch.device("cpu")]
    assert given == {"features": torch.device("cpu"), "classifiers": torch.device("cpu")}
