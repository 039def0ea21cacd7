"""The CPU dry run of the GPU recipe's script (``benchmarks/gpu/dp_mepf_cifar10.sh``) at tiny sizes, as the two
machines run it: the release drawn where the images are (``RELEASE_ONLY=1``), then the timed steps and the training
resumed from it where there are none (``RELEASE=...``, an empty ``DPZOO_DATA_DIR``); the model folder loads, samples,
and holds the release's one ledger entry. So the script is known to work before a GPU machine runs it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import torch

import zoo
from tests.folders import write_image_folder
from tests.hang_limits import hang_limit
from zoo.privacy import PrivacyLedger
from zoo.privacy.callback import CHECKPOINT_KEY

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu" / "dp_mepf_cifar10.sh"
TINY = [
    "--model.init_args.input_size=32",
    "--model.init_args.blocks=[0, 1]",
    "--model.init_args.generator_width=4",
    "--model.init_args.pixel_features=64",
    "--model.init_args.batch_size=6",
]


def run_script(out: Path, *options: str, **env: str) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if key != "OUT"}
    environment.update(PYTHON=sys.executable, **env)
    run = subprocess.run(
        [str(SCRIPT), str(out), *options],
        cwd=out.parent,
        env=environment,
        capture_output=True,
        text=True,
        timeout=hang_limit(20),
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run


def test_the_gpu_recipes_script_releases_where_the_images_are_and_trains_from_the_release_alone(tmp_path):
    images = write_image_folder(tmp_path / "images", per_class=4, size=(32, 32))
    run_script(tmp_path / "release", "--images", str(images), *TINY, RELEASE_ONLY="1")
    release = tmp_path / "release" / "release.ckpt"
    (entry,) = PrivacyLedger.from_dict(torch.load(release, weights_only=True)[CHECKPOINT_KEY]).entries

    empty = tmp_path / "no-data"
    empty.mkdir()
    out = tmp_path / "out"
    run = run_script(out, *TINY, RELEASE=str(release), TIME_STEPS="3", FILL_S="0.1", DPZOO_DATA_DIR=str(empty))
    timing = json.loads((out / "timing.json").read_text())
    assert timing["steps"] == 3 and timing["seconds_per_step"] > 0 and timing["device"] == "cpu"
    assert "training" in run.stdout and "trained" in run.stdout
    model = zoo.load(out / "model")
    assert [e.to_dict() for e in model.privacy_ledger.entries] == [entry.to_dict()]  # resumed, not drawn again
    assert model.hparams.network_bf16 and model.hparams.input_size == 32
    assert model.sample(3, seed=0).shape == (3, 3, 32, 32)
    assert sum(f.stat().st_size for f in (out / "model").iterdir()) < 16 * 2**20
