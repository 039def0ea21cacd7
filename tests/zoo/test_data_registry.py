"""Data sources are declared once (``zoo.data.sources``): a named set declared in this file alone reaches the recipe
choice, ``dpzoo train``, ``dpzoo evaluate --dataset`` and the card, and the ledger knows its records by name; and no
module outside the registry spells a named set in a table."""

import ast
from pathlib import Path

import pytest
import torch
import yaml

from lightning_modules import DPMERF
from tests.folders import write_image_folder
from zoo.cli import main
from zoo.data import ImageDataModule, sources
from zoo.data.sources import NamedImages, named_sources, register_named
from zoo.privacy import DPBudget
from zoo.privacy.records import disjoint_by_name
from zoo.privacy.records import named_sources as named_records
from zoo.recipes import choose_recipe
from zoo.release.hub import save_pretrained
from zoo.release.layout import load_config
from zoo.shapes import model_for_data
from zoo.training import train

ROOT = Path(__file__).resolve().parents[2]
#: the registry and its registrations; the literature's table of published numbers cites named sets by name, and
#: ``test_the_literature_names_only_registered_sets`` holds it to the registry
REGISTRY = {"zoo/data/sources.py", "zoo/data/registrations.py", "zoo/release/literature.py"}
QUIET = dict(accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False)
TOY = "toy_digits"


def load_toy(source: NamedImages, train: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """30 training or 12 test 8×8 grey images in 3 classes, each class its own brightness."""
    generator = torch.Generator().manual_seed(0 if train else 1)
    labels = torch.arange(30 if train else 12) % 3
    images = (labels.view(-1, 1, 1, 1) * 0.3 + 0.1 * torch.rand(len(labels), 1, 8, 8, generator=generator)).clamp(0, 1)
    return images, labels


@pytest.fixture
def toy_source(monkeypatch, tmp_path):
    """The toy set registered for this test, with a tiny dp-merf recipe for it in a recipes folder of its own."""
    monkeypatch.setattr(sources, "_NAMED", named_sources())
    source = register_named(
        NamedImages(
            name=TOY,
            title="Toy digits",
            image_shape=(1, 8, 8),
            classes=("dark", "grey", "light"),
            loader=f"{__name__}:load_toy",
            offline_help="nothing: the toy set is made in memory",
        )
    )
    recipes = tmp_path / "configs"
    recipes.mkdir()
    architecture = {
        key: list(value) if isinstance(value, tuple) else value
        for key, value in DPMERF.tiny_recipe().architecture.items()
        if key not in ("image_shape", "num_classes")
    }
    recipe = {
        "privacy": {"class_path": "zoo.privacy.DPBudget", "init_args": {"target_epsilon": 1.0}},
        "model": {"class_path": "lightning_modules.DPMERF", "init_args": architecture},
        "data": {"class_path": "zoo.data.ImageDataModule", "init_args": {"dataset": TOY, "validation_size": 6}},
        "trainer": {
            "max_steps": 2,
            "accelerator": "cpu",
            "logger": False,
            "enable_checkpointing": False,
            "limit_val_batches": 0,
        },
    }
    (recipes / f"dp_merf_{TOY}_eps1.yaml").write_text(yaml.safe_dump(recipe))
    monkeypatch.setattr("zoo.recipes.RECIPES", recipes)
    monkeypatch.setattr("zoo.front_checks.RECIPES", recipes)
    return source


def test_a_named_set_declared_here_reaches_the_recipes_train_evaluate_and_the_card(toy_source, tmp_path, capsys):
    choice = choose_recipe("dp-merf", 1.0, 1, (8, 8), False)
    assert choice.recipe.dataset == TOY and "grey images (Toy digits, 8×8)" in choice.reason

    folder = write_image_folder(tmp_path / "scans", per_class=16, size=(8, 8), mode="L")
    out = tmp_path / "scans-model"
    assert main(["train", str(folder), "--method", "dp-merf", "--epsilon", "1", "--out", str(out)]) == 0
    assert (
        f"recipe: configs/dp_merf_{TOY}_eps1.yaml: dp-merf's recipe for grey images (Toy digits"
        in capsys.readouterr().out
    )

    data = ImageDataModule(TOY, validation_size=6)
    assert data.records_identity.startswith(f"{TOY}/train#") and f"{TOY}/test" in named_records()
    assert disjoint_by_name((data.records_identity, data.dataset_id), ("mnist/train#ab", "mnist/train[...]"))
    torch.manual_seed(0)
    model = train(
        model_for_data(DPMERF(**DPMERF.tiny_recipe().architecture), data), data, DPBudget(1.0), max_steps=2, **QUIET
    )
    saved = save_pretrained(model, tmp_path / "toy-model")
    evaluate = ["evaluate", str(saved), "--dataset", TOY, "--metrics", "cas_lr", "--num-samples", "30", "--runs", "1"]
    assert main([*evaluate, "--write-card"]) == 0
    assert f"{TOY} official test split" in capsys.readouterr().out
    (row,) = load_config(saved)["evaluation"]["results"]
    assert row["dataset_name"] == TOY and f"{TOY} official test split" in (saved / "README.md").read_text()


def test_no_module_spells_a_named_set_in_a_table_outside_the_registry():
    """A string that is a named set's name, as an element of a tuple, list, set or dict (a table of datasets), in any
    module of zoo/ or lightning_modules/ but the registry's."""
    names = set(named_sources())
    found = []
    for path in sorted([*(ROOT / "zoo").rglob("*.py"), *(ROOT / "lightning_modules").rglob("*.py")]):
        relative = path.relative_to(ROOT).as_posix()
        if relative in REGISTRY:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            elements = [*node.keys, *node.values] if isinstance(node, ast.Dict) else getattr(node, "elts", [])
            if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
                found += [
                    f"{relative}:{e.lineno} {e.value!r}"
                    for e in elements
                    if isinstance(e, ast.Constant) and e.value in names
                ]
    assert not found, f"named sets spelled in tables outside zoo/data/sources.py's registrations: {found}"


def test_the_literature_names_only_registered_sets():
    from zoo.release.literature import DPIMAGEBENCH

    assert {dataset for _, dataset, _ in DPIMAGEBENCH} <= set(named_sources())
