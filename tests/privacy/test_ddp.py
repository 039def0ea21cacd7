"""Under Lightning DDP (2 CPU processes, gloo): the noise per logical step has std σC in total, every rank
applies the same update, the ranks' batches form one Poisson sample, DDP does not all-reduce the raw
gradients that DP-SGD overwrites, and only rank 0 computes ε. `dpzoo fit` under DDP trains on every rank
and writes one model folder; Private Set refuses more than one process in one line. DDP's
``broadcast_buffers=False``, which skips the first sync of buffers, is refused before any work."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from pytorch_lightning.strategies import DDPStrategy

from tests.folders import write_image_folder
from tests.hang_limits import hang_limit
from tests.zoo.test_own_images import TINY_LFLOW
from zoo.cli import main
from zoo.privacy import PrivacyConfigError
from zoo.privacy.ddp import check_buffer_sync

ROOT = Path(__file__).resolve().parents[2]
QUIET = ["--trainer.enable_progress_bar", "false", "--trainer.accelerator", "cpu"]
DDP = ["--trainer.strategy", "ddp", "--trainer.devices", "2"]


def run_script(script: str, *args: str) -> subprocess.CompletedProcess:
    """Run a script of this folder; its output pipes close once every rank it launched has exited."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, str(ROOT / "tests" / "privacy" / script), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=hang_limit(30),
    )


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    out = tmp_path_factory.mktemp("ddp")
    result = run_script("ddp_noise_run.py", str(out))
    assert result.returncode == 0, result.stderr[-3000:]
    return [torch.load(out / f"rank{r}.pt") for r in range(2)]


@pytest.mark.heavy
def test_ddp_adds_noise_once_and_samples_disjoint_shards(ranks):
    for step in range(3):
        for a, b in zip(ranks[0]["grads"][step], ranks[1]["grads"][step], strict=True):
            assert torch.equal(a, b)  # one update, identical on every rank
    noise = torch.cat([g.flatten() for g in ranks[0]["grads"][0]])
    expected = 2.0 * 0.5 / (0.25 * 400)  # σC/(qN), N over all ranks
    assert ranks[0]["expected_batch_size"] == pytest.approx(100)
    assert noise.std().item() == pytest.approx(expected, rel=0.03)  # √2 too large if each rank added noise

    for step in range(3):
        first, second = (set(r["indices"][step].tolist()) for r in ranks)
        assert not first & second
        assert all(i % 2 == 0 for i in first) and all(i % 2 == 1 for i in second)
    assert ranks[0]["steps"] == ranks[1]["steps"] == 3
    assert ranks[0]["epsilon"] == ranks[1]["epsilon"] > 0


@pytest.mark.heavy
def test_ddp_keeps_the_private_buckets_local_and_averages_the_others(ranks):
    """DDP's first step reduces one bucket of everything; from the second, its buckets hold one weight each."""
    for step in (1, 2):
        assert not torch.equal(ranks[0]["raw_private"][step], ranks[1]["raw_private"][step])  # never all-reduced
        assert torch.equal(ranks[0]["raw_public"][step], ranks[1]["raw_public"][step])  # averaged as DDP does
    for step in range(3):
        for a, b in zip(ranks[0]["written"][step], ranks[1]["written"][step], strict=True):
            assert torch.equal(a, b)  # the noisy update is still one, identical on every rank


@pytest.mark.heavy
def test_only_rank_zero_computes_and_logs_epsilon(ranks):
    assert ranks[0]["epsilon_computations"] > 0 and ranks[1]["epsilon_computations"] == 0


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return write_image_folder(tmp_path_factory.mktemp("ddp-images") / "pets", per_class=10, size=(12, 12))


def fit_on_two_ranks(out: Path, *argv: str) -> subprocess.CompletedProcess:
    result = run_script("ddp_fit_run.py", str(out), *argv, *QUIET, *DDP)
    assert sorted(p.name for p in out.glob("rank*.exit")) == ["rank0.exit", "rank1.exit"], result.stderr[-3000:]
    return result


@pytest.mark.heavy
def test_dpzoo_fit_under_ddp_trains_on_every_rank_and_saves_once(folder, tmp_path):
    recipe = ["--config", "configs/dp_lflow_mnist_eps1.yaml", "--images", str(folder), *TINY_LFLOW]
    result = fit_on_two_ranks(tmp_path, *recipe, "--trainer.max_steps", "2", "--save_pretrained", str(tmp_path / "m"))
    assert [(tmp_path / f"rank{r}.exit").read_text() for r in range(2)] == ["0", "0"], result.stderr[-3000:]
    assert result.returncode == 0
    assert (tmp_path / "saves").read_text() == "0\n"  # rank 0 alone writes
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["m"]  # no second folder, no staging left
    assert (tmp_path / "m" / "config.json").is_file()
    assert result.stdout.count("saved ") == 1


@pytest.mark.heavy
def test_private_set_refuses_ddp_in_one_line(folder, tmp_path):
    recipe = ["--config", "configs/private_set_mnist_eps1.yaml", "--images", str(folder)]
    tiny = ["--model.init_args.width", "4", "--model.init_args.depth", "2", "--trainer.max_steps", "2"]
    result = fit_on_two_ranks(tmp_path, *recipe, *tiny, "--save_pretrained", str(tmp_path / "m"))
    assert [(tmp_path / f"rank{r}.exit").read_text() for r in range(2)] == ["2", "2"]
    errors = [line for line in result.stderr.splitlines() if line.startswith("dpzoo fit: error:")]
    assert errors and all("PrivateSet trains on one device" in line for line in errors)  # one line per rank
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "m").exists()


def test_buffers_are_synced_at_the_start_at_least():
    with pytest.raises(PrivacyConfigError, match="forward_sync_buffers=False instead"):
        check_buffer_sync(DDPStrategy(broadcast_buffers=False))
    for synced_once in (DDPStrategy(forward_sync_buffers=False), DDPStrategy(), "ddp", None):
        check_buffer_sync(synced_once)


def test_dpzoo_fit_refuses_unsynced_buffers_before_any_work(folder, tmp_path, capsys):
    strategy = ["--trainer.strategy", "pytorch_lightning.strategies.DDPStrategy"]
    strategy += ["--trainer.strategy.broadcast_buffers", "false"]
    recipe = ["--config", "configs/dp_merf_mnist_eps1.yaml", "--images", str(folder), *QUIET, *strategy]
    assert main(["fit", *recipe, "--save_pretrained", str(tmp_path / "m")]) == 2
    assert "skips the first sync of buffers" in capsys.readouterr().err
