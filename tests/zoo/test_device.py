"""Evaluation on a chosen device: ``zoo.load`` and ``dpzoo sample/evaluate`` take one, a device this machine lacks
is refused in one line before any weights are read, and ``dpzoo train``'s time estimate leaves every CUDA
generator as it found it. These run on the CPU: CUDA is mocked where a test needs to say it is there or not."""

import contextlib
import random

import numpy as np
import pytest
import torch

import zoo
from tests.zoo.test_hub import tiny_private_flow
from zoo.cli import main
from zoo.errors import UserError
from zoo.release.hub import save_pretrained


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return save_pretrained(tiny_private_flow(), tmp_path_factory.mktemp("device") / "tiny-flow")


@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.fixture
def two_gpus(monkeypatch):
    """CUDA said to be there (only the checks ask; nothing is moved onto it)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)


def test_load_puts_the_model_on_the_device_and_samples_come_back_on_the_cpu(folder):
    default = zoo.load(folder)
    for device in ("cpu", torch.device("cpu")):
        model = zoo.load(folder, device=device)
        assert model.device == torch.device("cpu") and not model.training
        samples = model.sample(4, seed=0)
        assert samples.device.type == "cpu" and torch.equal(samples, default.sample(4, seed=0))


def test_a_device_this_machine_lacks_is_refused_in_one_line_before_the_weights_are_read(
    folder, no_cuda, monkeypatch, capsys
):
    monkeypatch.setattr("zoo.release.hub.from_pretrained", lambda *args: pytest.fail("the weights were read"))
    for device in ("cuda", "cuda:1", torch.device("cuda")):
        with pytest.raises(UserError, match=r"needs CUDA, but this machine has none.*use --device cpu"):
            zoo.load(folder, device=device)
    for device, message in [("gpu", "unknown device 'gpu': use cpu, cuda, cuda:N or mps"), ("meta", "not meta")]:
        with pytest.raises(UserError, match=message):
            zoo.load(folder, device=device)
    assert main(["sample", str(folder), "--device", "cuda", "--out", "never-written.png"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("dpzoo sample: error: device 'cuda' needs CUDA") and error.count("\n") == 1


def test_a_cuda_index_beyond_the_machines_devices_is_refused(folder, two_gpus, monkeypatch):
    monkeypatch.setattr("zoo.release.hub.from_pretrained", lambda *args: pytest.fail("the weights were read"))
    with pytest.raises(UserError, match=r"no device cuda:2: this machine has 2 CUDA device\(s\), cuda:0 to cuda:1"):
        zoo.load(folder, device="cuda:2")


def test_sample_passes_its_device_to_the_core(folder, tmp_path, no_cuda, monkeypatch):
    from zoo.release import loading

    asked, load = [], loading.load

    def recording_load(name, device=None):
        asked.append(device)
        return load(name, device=device)

    monkeypatch.setattr(loading, "load", recording_load)
    for flag in ("cpu", "auto"):
        assert main(["sample", str(folder), "--n", "4", "--out", str(tmp_path / f"{flag}.png"), "--device", flag]) == 0
    assert main(["sample", str(folder), "--n", "4", "--out", str(tmp_path / "default.png")]) == 0
    assert asked == ["cpu", "cpu", "cpu"]  # auto without CUDA is the CPU; the default is the CPU
    assert (tmp_path / "auto.png").read_bytes() == (tmp_path / "default.png").read_bytes()


@pytest.mark.parametrize(
    ("flag", "cuda", "device"), [("auto", True, "cuda"), ("auto", False, "cpu"), ("cuda:1", True, "cuda:1")]
)
def test_evaluate_passes_its_device_to_the_core(folder, monkeypatch, capsys, flag, cuda, device):
    given = {}

    def recording_evaluate(model, dataset, **kwargs):
        given.update(kwargs)
        return {"results": {}}

    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr("zoo.metrics.evaluate", recording_evaluate)
    assert main(["evaluate", str(folder), "--metrics", "fid_lenet", "--device", flag]) == 0
    assert given["device"] == device
    assert main(["evaluate", str(folder), "--metrics", "fid_lenet"]) == 0
    assert given["device"] == "cpu"


def test_the_time_estimate_forks_the_generator_of_every_cuda_device(two_gpus, monkeypatch):
    """The real run's draws, on the GPU too, must not depend on whether the estimate ran before it."""
    from zoo import estimate

    forked = []

    @contextlib.contextmanager
    def fork_rng(devices):
        forked.append(devices)
        yield

    monkeypatch.setattr(torch.random, "fork_rng", fork_rng)
    with estimate._unchanged_randomness():
        pass
    assert forked == [[0, 1]]


def test_the_time_estimate_restores_python_and_numpy_randomness_even_when_it_fails(no_cuda):
    from zoo import estimate

    random.seed(3)
    np.random.seed(3)
    expected = random.random(), np.random.rand()
    random.seed(3)
    np.random.seed(3)
    with pytest.raises(RuntimeError), estimate._unchanged_randomness():
        random.random(), np.random.rand()
        raise RuntimeError("the stand-in run failed")
    assert (random.random(), np.random.rand()) == expected
