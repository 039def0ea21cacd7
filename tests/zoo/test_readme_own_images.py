"""The README's "Your own images" section, executed as written on a tiny folder that the test writes,
so the docs cannot rot. Only sizes shrink: a few training steps, tiny nets, a few dozen samples."""

import re
import shlex
from pathlib import Path

import pytest

from tests.folders import write_image_folder
from tests.zoo.test_own_images import TINY_LFLOW, TINY_MERF
from tests.zoo.test_train import tiny_recipes  # noqa: F401  (a fixture: `dpzoo train` finds tiny recipes)
from zoo.cli import main

ROOT = Path(__file__).resolve().parents[2]
SHRINK = {
    "train": ["--max-steps", "2"],
    "fit": ["--trainer.max_steps", "2", "--trainer.enable_progress_bar", "false"],
    "evaluate": ["--num-samples", "30", "--runs", "1", "--epochs", "1"],
    "sample": [],
}
TINY_NETS = {"dp_merf": TINY_MERF, "dp_lflow": TINY_LFLOW}
PYTHON_SIZES = {"num_samples=2000": "num_samples=30", "max_steps=30": "max_steps=2"}


def section_blocks(language: str) -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Your own images", 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", section, flags=re.S)


@pytest.fixture
def random_inception(monkeypatch):
    """torch-fidelity's Inception with random weights: the real FID code path, offline (no weights here)."""
    from torch_fidelity import feature_extractor_inceptionv3 as inception

    monkeypatch.setattr(inception, "load_state_dict_from_url", lambda *args, **kwargs: {})
    monkeypatch.setattr(inception.FeatureExtractorInceptionV3, "load_state_dict", lambda self, *args, **kwargs: None)


@pytest.mark.usefixtures("tiny_recipes")
def test_the_own_images_section_runs_as_written(tmp_path, monkeypatch, random_inception):
    monkeypatch.chdir(tmp_path)
    write_image_folder(tmp_path / "my-images", per_class=10, size=(24, 36), test_per_class=3)
    write_image_folder(tmp_path / "more-images", per_class=10, size=(24, 36), seed=1)
    (shell,) = section_blocks("bash")
    commands = [shlex.split(line, comments=True) for line in shell.splitlines()]
    for command in filter(None, commands):
        assert command[0] == "dpzoo"
        argv = [arg.replace("configs/", f"{ROOT}/configs/") for arg in command[1:]]
        recipe = next((a for a in argv if a.endswith(".yaml")), "")
        tiny = next((nets for name, nets in TINY_NETS.items() if name in recipe), [])
        assert main([*argv, *SHRINK[argv[0]], *tiny]) == 0, command
    (python,) = section_blocks("python")
    for written, small in PYTHON_SIZES.items():
        assert written in python
        python = python.replace(written, small)
    namespace: dict = {}
    exec(compile(python, "README.md (Your own images)", "exec"), namespace)
    assert Path("out/mine-grid.png").is_file() and Path("out/my-lflow-tuned/config.json").is_file()
    assert {"fid", "cas_cnn"} <= set(namespace["report"]["results"])
    assert len(namespace["tuned"].privacy_ledger.guarantees()) == 2  # my-images and more-images, each its own
