"""The docs site and every example in it: ``mkdocs build --strict`` passes, the model table is the generated one,
and every ```python and ```bash block of README.md and docs/ runs as written, sizes shrunk (tests/docs/snippets.py
says how blocks are marked when they cannot run here)."""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import json
import os
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.docs.snippets import REFUSED_LANGUAGES, ROOT, RUN_LANGUAGES, Block, all_blocks, bash_commands, blocks, pages
from tests.folders import write_image_folder, write_saved_dataset, write_table

STEPS = "2"
SAMPLES = "30"
#: command-line flags that shrink a dpzoo command: (flag, small value), replacing the value written
SHRINK = {
    "train": [("--max-steps", STEPS)],
    "fit": [("--trainer.max_steps", STEPS), ("--trainer.enable_progress_bar", "false")],
    "evaluate": [("--num-samples", SAMPLES)],
}
#: and for the classifiers of image metrics (CAS, set accuracy): one run of one epoch
CLASSIFIER_SHRINK = [("--runs", "1"), ("--epochs", "1")]
#: keyword arguments of Python examples that shrink: the number written is replaced
PYTHON_SIZES = {r"\bmax_steps=[\d_]+": f"max_steps={STEPS}", r"\bnum_samples=[\d_]+": f"num_samples={SAMPLES}"}
#: recipe arguments that must follow the data, not the tiny recipe
DATA_SHAPED = ("image_shape", "num_classes", "features_dim", "dim")
#: the same, for one method: a table's number of columns
DATA_SHAPED_BY_METHOD = {"DPNF": ("features",)}


def test_every_block_is_runnable_or_says_why_not():
    found = all_blocks()
    assert len(found) > 20, "the docs lost their examples"
    for block in found:
        assert block.language not in REFUSED_LANGUAGES, f"{block.where}: name the language (python, bash, text, …)"
        for mark in (block.not_run, block.heavy):
            assert mark is None or len(mark.split()) >= 3, f"{block.where}: a skip needs its reason in words"
        if block.language not in RUN_LANGUAGES:
            assert block.not_run is None and block.heavy is None, f"{block.where}: only python/bash blocks run"
    run = [b for b in found if b.language in RUN_LANGUAGES and b.not_run is None]
    assert len(run) >= 2 * len([b for b in found if b.not_run is not None]), "most examples must run"


def test_mkdocs_build_strict_passes(tmp_path):
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (pip install -e '.[dev]')")
    build = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([*build, "--config-file", str(ROOT / "mkdocs.yml")], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "index.html").is_file()


def test_the_model_tables_are_generated_from_the_cards():
    from zoo.release.model_table import load_configs, targets

    for path, text in targets().items():
        assert path.read_text() == text, f"{path.name} is out of date: run `python -m zoo.release.model_table`"
    shipped = {config["model_id"] for config in load_configs(ROOT / "checkpoints")}
    readme = (ROOT / "README.md").read_text()
    assert all(f"[{model_id}](checkpoints/{model_id}/README.md)" in readme for model_id in shipped)
    stated = re.search(r"(\d+) shipped checkpoints", readme)
    assert stated and int(stated.group(1)) == len(shipped), "README.md's count of shipped checkpoints is stale"


def test_the_option_tables_are_generated_from_the_requests():
    from zoo.option_tables import PAGE, page_text

    assert PAGE.read_text() == page_text(PAGE.read_text()), "run `python -m zoo.option_tables`"


def _cases() -> list:
    cases = []
    for page in pages():
        run = [b for b in blocks(page) if b.language in RUN_LANGUAGES and b.not_run is None]
        name = str(page.relative_to(ROOT))
        if any(b.heavy is None for b in run):
            cases.append(pytest.param(name, False, id=name))
        if any(b.heavy is not None for b in run):
            cases.append(pytest.param(name, True, id=f"{name}-heavy", marks=pytest.mark.heavy))
    return cases


@pytest.mark.parametrize(("page", "heavy"), _cases())
def test_the_examples_of_a_page_run(page, heavy, tmp_path, monkeypatch, random_inception):
    """A page's blocks in order, as a reader runs them: one Python namespace, one working folder. The default
    case skips the page's heavy blocks; the heavy case runs them all."""
    runner = Runner(tmp_path, monkeypatch)
    for block in blocks(ROOT / page):
        if block.language not in RUN_LANGUAGES or block.not_run is not None or (block.heavy and not heavy):
            continue
        runner.run(block)
    runner.check_repository_untouched()


@pytest.fixture
def random_inception(monkeypatch):
    """torch-fidelity's Inception with random weights: FID's real code path, offline and without the weights."""
    from torch_fidelity import feature_extractor_inceptionv3 as inception

    monkeypatch.setattr(inception, "load_state_dict_from_url", lambda *args, **kwargs: {})
    monkeypatch.setattr(inception.FeatureExtractorInceptionV3, "load_state_dict", lambda self, *args, **kwargs: None)


class Runner:
    """Runs blocks in a fresh working folder that holds the image folders the docs name (3 classes of 32×32
    colour images), tables of one of them and a saved ``datasets`` copy of another, with the shipped checkpoints
    copied so that ``--write-card`` or ``dpzoo model-cards`` never touch the repository's."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
        import zoo

        self.monkeypatch = monkeypatch
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        checkpoints = shutil.copytree(ROOT / "checkpoints", tmp_path / "shipped" / "checkpoints")
        monkeypatch.setenv("DPZOO_CHECKPOINTS_DIR", str(checkpoints))
        write_image_folder(tmp_path / "my-images", per_class=10, size=(32, 32), test_per_class=3)
        write_image_folder(tmp_path / "more-images", per_class=10, size=(32, 32), seed=1)
        write_image_folder(tmp_path / "public-images", per_class=10, size=(32, 32), seed=2)
        write_image_folder(tmp_path / "photos", per_class=14, size=(32, 32), seed=3)
        for table in ("photos.csv", "photos.parquet"):  # the images of photos/, labels in a column `species`
            write_table(tmp_path / "photos", tmp_path / table)
        write_saved_dataset(tmp_path / "my-images", tmp_path / "my-dataset")  # its train and test splits
        for name in ("evaluate", "audit"):
            monkeypatch.setattr(zoo, name, _shrunk(getattr(zoo, name), runs=1, epochs=1))
        self.namespace: dict = {"__name__": "__main__"}
        self.before = _repository_state()

    def run(self, block: Block) -> None:
        if block.language == "python":
            code = block.code
            for written, small in PYTHON_SIZES.items():
                code = re.sub(written, small, code)
            exec(compile(code, block.where, "exec"), self.namespace)
        else:
            for argv in bash_commands(block.code):
                self.command(argv, block)

    def command(self, argv: list[str], block: Block) -> None:
        from zoo.cli import main

        argv = [str(ROOT / arg) if arg.startswith(("configs/", "benchmarks/", "experiments/")) else arg for arg in argv]
        if argv[0] == "dpzoo":
            assert main(_shrink(argv[1:])) == 0, f"{block.where}: {' '.join(argv)}"
        elif argv[:3] == ["python", "-m", "zoo.release.model_table"]:
            from zoo.release import model_table

            assert "--check" in argv, f"{block.where}: the test only checks the table (add --check or not-run)"
            assert model_table.main(argv[3:]) == 0
        elif argv[0] == "python" and argv[1].endswith(".py"):
            self.monkeypatch.setattr(sys, "argv", argv[1:])
            runpy.run_path(argv[1], run_name="__main__")
        else:
            pytest.fail(f"{block.where}: the test cannot run `{argv[0]}`; mark the block <!-- not-run: why -->")

    def check_repository_untouched(self) -> None:
        assert _repository_state() == self.before, "an example wrote into the repository"


def _repository_state() -> dict[str, int]:
    """The modification times of what an example could overwrite: the shipped checkpoints and the model index."""
    watched = [ROOT / "MODEL_CARDS.md", *sorted((ROOT / "checkpoints").rglob("*"))]
    return {str(path): path.stat().st_mtime_ns for path in watched if path.is_file()}


def _shrunk(function, **limits):
    accepts = inspect.signature(function).parameters
    open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepts.values())

    @functools.wraps(function)
    def small(*args, **kwargs):
        kwargs.update({k: v for k, v in limits.items() if k in accepts or open_ended})
        return function(*args, **kwargs)

    return small


def _shrink(argv: list[str]) -> list[str]:
    """A dpzoo command with its sizes shrunk; ``fit`` also gets the tiny nets of its recipe's method."""
    argv = list(argv)
    metrics = argv[argv.index("--metrics") + 1] if "--metrics" in argv else ""
    classifiers = any(m.startswith("cas") or m == "set_accuracy" for m in metrics.split(","))
    for flag, value in SHRINK.get(argv[0], []) + (CLASSIFIER_SHRINK if argv[0] == "evaluate" and classifiers else []):
        if flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
    if argv[0] == "evaluate" and "--write-card" in argv:
        argv.append("--replace-evaluation")  # fewer samples than the card's evaluation: another protocol
    argv = [re.sub(r"\bsteps: \d+", f"steps: {STEPS}", arg) for arg in argv]  # a stage's steps, as in warm_start
    if argv[0] == "fit" and "--config" in argv:
        argv += _tiny_nets(Path(argv[argv.index("--config") + 1]))
    return argv


def _tiny_nets(recipe: Path) -> list[str]:
    """``--model.init_args.NAME VALUE`` for the architecture of the recipe's method's tiny recipe, but for the
    arguments that must fit the data."""
    model = yaml.safe_load(recipe.read_text())["model"]
    module, name = model["class_path"].rsplit(".", 1)
    architecture = getattr(importlib.import_module(module), name).tiny_recipe().architecture
    return [
        arg
        for key, value in architecture.items()
        if key not in DATA_SHAPED + DATA_SHAPED_BY_METHOD.get(name, ()) and key in (model.get("init_args") or {})
        for arg in (f"--model.init_args.{key}", json.dumps(value) if not isinstance(value, str) else value)
    ]
