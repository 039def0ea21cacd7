"""Front ends translate, the core runs objects (issue 54): a recipe given as a mapping runs with its
``RunOptions`` and ``Provenance`` and no command line; nothing in ``zoo/`` builds a command line out of Python values
for a parser to read back; ``dpzoo train``'s card command is spelled from its request."""

import ast
import json
import warnings
from pathlib import Path

from tests.folders import write_image_folder
from zoo.fit import run_recipe
from zoo.recipe_cli import parse_recipe
from zoo.run_plan import Provenance, RunOptions
from zoo.train_request import TrainRequest

ZOO = Path(__file__).resolve().parents[2] / "zoo"

TINY_FOLDER_RECIPE = {
    "seed_everything": 0,
    "privacy": {"class_path": "zoo.privacy.DPBudget", "init_args": {"target_epsilon": 1.0, "accountant": "rdp"}},
    "model": {
        "class_path": "lightning_modules.DPMERF",
        "init_args": {"features": 64, "hidden": 16, "channels": [4, 2], "kernel_size": 3, "batch_size": 8},
    },
    "data": {"class_path": "zoo.data.ImageFolderDataModule", "init_args": {"root": None, "validation_size": 0}},
    "trainer": {
        "max_steps": 2,
        "accelerator": "cpu",
        "logger": False,
        "enable_checkpointing": False,
        "enable_progress_bar": False,
        "enable_model_summary": False,
        "limit_val_batches": 0,
    },
}


def flags_in_displays(path: Path) -> list[str]:
    """Each ``--flag`` string written inside a list, tuple or set display: the shape of an argv put together."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            found += [
                f"{path.relative_to(ZOO.parent)}:{node.lineno} {element.value}"
                for element in node.elts
                if isinstance(element, ast.Constant)
                and isinstance(element.value, str)
                and element.value.startswith("--")
            ]
    return found


def test_no_command_line_is_built_from_python_values_in_zoo():
    """``dpzoo train`` once turned its values into up to 15 argv strings (``str(list(size))``) for LightningCLI to
    parse back; a recipe is a mapping now. Commands a card records are spelled from a mapping of flags
    (``zoo.release.layout.command_line``), never as an argv list."""
    sources = sorted(ZOO.rglob("*.py"))
    assert [found for path in sources for found in flags_in_displays(path)] == []
    assert [str(path) for path in sources if "str(list(" in path.read_text()] == []


def test_a_recipe_mapping_runs_with_its_options_and_provenance_and_no_command_line(tmp_path):
    """A Python caller's run: no argv, no process-wide warning filter left behind, the card records the
    provenance given."""
    photos = write_image_folder(tmp_path / "photos", per_class=6, size=(8, 8), mode="L")
    recipe = {**TINY_FOLDER_RECIPE, "data": {**TINY_FOLDER_RECIPE["data"]}}
    recipe["data"]["init_args"] = {**recipe["data"]["init_args"], "root": str(photos)}
    filters = list(warnings.filters)
    parsed = parse_recipe(recipe)
    assert warnings.filters == filters
    assert parsed.model.data_arguments()["image_shape"] != (1, 8, 8) and parsed.pinned == frozenset()
    assert parse_recipe(parsed.plan).plan == parsed.plan  # the plan an interrupted run writes reads back as it was
    out = tmp_path / "model"
    provenance = Provenance("my notebook, cell 3", "recipe.yaml", "chosen by hand")
    run = run_recipe(parsed, RunOptions(save_pretrained=str(out), license="cc-by-4.0"), provenance)
    assert run.model.data_arguments()["image_shape"] == (1, 8, 8)  # built for the folder
    assert run.folder == out and run.config == json.loads((out / "config.json").read_text())  # what it wrote
    assert run.config["recipe"] == provenance.recipe() and run.config["license"] == "cc-by-4.0"


def test_run_options_are_the_settings_of_the_same_names():
    settings = {"save_pretrained": "out/m", "weights_dtype": "float16", "overwrite": None, "selection": "x"}
    assert RunOptions.from_settings(settings) == RunOptions(save_pretrained="out/m", weights_dtype="float16")


def test_dpzoo_trains_card_command_names_every_option_given_and_no_local_path(tmp_path):
    base = tmp_path / "bases" / "my-base"
    base.mkdir(parents=True)
    everything = TrainRequest(
        str(tmp_path / "my photos"),
        "dp-merf",
        3.0,
        delta=1e-6,
        out=str(tmp_path / "out"),
        max_steps=5,
        max_time="10m",
        license="cc-by-4.0",
        convert="pad",
        channels=1,
        image_size=28,
        init_from=str(base),
        overwrite=True,
        classes=("cats", "dogs"),
    )
    assert everything.card_command() == (
        "dpzoo train 'my photos' --method dp-merf --epsilon 3 --delta 1e-06 --max-steps 5 --max-time 10m "
        "--license cc-by-4.0 --convert pad --channels 1 --image-size 28 --init-from my-base --classes cats,dogs"
    )
    plain = TrainRequest("photos", "dp-lflow", 1.0, init_from="dp-merf-cifar10-public-base")
    assert (
        plain.card_command()
        == "dpzoo train photos --method dp-lflow --epsilon 1 --init-from dp-merf-cifar10-public-base"
    )
