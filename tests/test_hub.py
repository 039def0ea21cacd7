"""save_pretrained → card → from_pretrained, loading by id/folder/Hub cache, and bad folders."""

import json
import shutil

import pytest
import torch
from huggingface_hub import ModelCard, constants
from safetensors.torch import load_file
from torch.utils.data import TensorDataset

import zoo
from lightning_modules import DPLFlow
from tests.toys import ToyData, tiny_trainer
from zoo.cards import model_cards_index
from zoo.hub import CheckpointError, from_pretrained, save_pretrained
from zoo.privacy import DPCallback
from zoo.registry import UnknownModelError

TINY = dict(image_shape=(1, 8, 8), channels=(4, 8), latent_dim=4, flow_blocks=2, flow_hidden=16)


def tiny_private_flow(dataset_id: str = "toy-images") -> DPLFlow:
    model = DPLFlow(**TINY)
    callback = DPCallback(noise_multiplier=1.0, max_grad_norm=0.1, accountant="rdp")
    images = TensorDataset(torch.rand(64, 1, 8, 8, generator=torch.Generator().manual_seed(0)), torch.zeros(64))
    tiny_trainer([callback], 2).fit(model, ToyData(images, 0.25, dataset_id))
    return model.eval()


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    model = tiny_private_flow()
    folder = save_pretrained(model, tmp_path_factory.mktemp("models") / "tiny-flow")
    return model, folder


def test_round_trip_gives_identical_samples_and_ledger(saved):
    model, folder = saved
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "config.json", "model.safetensors", "samples.png"]
    loaded = from_pretrained(folder)
    assert not loaded.training
    assert torch.equal(loaded.sample(8, seed=3), model.sample(8, seed=3))
    assert loaded.privacy_ledger == model.privacy_ledger


def test_card_parses_and_states_the_guarantee(saved):
    model, folder = saved
    card = ModelCard.load(folder / "README.md")
    privacy = card.data.to_dict()["privacy"]
    expected = model.privacy_ledger.epsilon("toy-images")
    assert privacy["epsilon"] == pytest.approx(expected, abs=1e-4)
    assert privacy["delta"] == 1e-5 and privacy["accountant"] == "rdp" and privacy["barrier"] == "B4"
    assert {"differential-privacy", "dp-lflow"} <= set(card.data.tags) and card.data.library_name == "dpzoo"
    assert "(ε = " in card.text


def test_half_precision_release_loads(saved, tmp_path):
    model, _ = saved
    folder = save_pretrained(model, tmp_path / "half", weights_dtype="float16")
    stored = load_file(str(folder / "model.safetensors"))
    assert {t.dtype for t in stored.values() if t.is_floating_point()} == {torch.float16}
    torch.testing.assert_close(from_pretrained(folder).sample(4, seed=0), model.sample(4, seed=0), atol=2e-2, rtol=0)


def broken_copy(saved, tmp_path, edit):
    folder = tmp_path / "broken"
    shutil.copytree(saved[1], folder)
    edit(folder)
    return folder


def edit_config(**changes):
    def edit(folder):
        config = json.loads((folder / "config.json").read_text())
        config.update(changes)
        (folder / "config.json").write_text(json.dumps(config))

    return edit


def truncate_weights(folder):
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize(
    "edit, error, message",
    [
        (truncate_weights, CheckpointError, "corrupt or truncated"),
        (lambda f: (f / "model.safetensors").write_bytes(b"garbage"), CheckpointError, "corrupt or truncated"),
        (lambda f: (f / "model.safetensors").unlink(), CheckpointError, "model.safetensors is missing"),
        (lambda f: (f / "config.json").unlink(), CheckpointError, "config.json is missing"),
        (lambda f: (f / "config.json").write_text("{"), CheckpointError, "not valid JSON"),
        (edit_config(method="dp-unknown"), UnknownModelError, "unknown method 'dp-unknown'"),
        (edit_config(format=7), CheckpointError, "format 7"),
        (edit_config(architecture={**TINY, "latent_dim": 5}), CheckpointError, "does not match the architecture"),
        (edit_config(architecture={**TINY, "depth": 3}), CheckpointError, "does not fit dp-lflow"),
        (edit_config(released_modules=["decoder"]), CheckpointError, "releases"),
    ],
)
def test_bad_folders_fail_clearly(saved, tmp_path, edit, error, message):
    with pytest.raises(error, match=message):
        from_pretrained(broken_copy(saved, tmp_path, edit))


def test_a_model_without_ledger_cannot_be_released(tmp_path):
    with pytest.raises(CheckpointError, match="no privacy ledger"):
        save_pretrained(DPLFlow(**TINY), tmp_path / "untrained")


def test_load_by_id_from_checkpoints_and_list_models(saved, tmp_path, monkeypatch):
    shutil.copytree(saved[1], tmp_path / "tiny-flow")
    monkeypatch.setenv("DPZOO_CHECKPOINTS_DIR", str(tmp_path))
    (listed,) = zoo.list_models()
    assert listed["model_id"] == "tiny-flow" and listed["method"] == "dp-lflow"
    assert listed["epsilon"] == pytest.approx(saved[0].privacy_ledger.epsilon("toy-images"), abs=1e-4)
    assert torch.equal(zoo.load("tiny-flow").sample(2, seed=0), saved[0].sample(2, seed=0))
    with pytest.raises(UnknownModelError, match="unknown model 'nope'.*Known ids: \\['tiny-flow'\\]"):
        zoo.load("nope")


def populate_hub_cache(cache, repo_id, folder):
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    commit = "0" * 40
    shutil.copytree(folder, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)


def test_offline_loading_uses_the_cache_and_names_what_is_missing(saved, tmp_path, monkeypatch):
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    populate_hub_cache(tmp_path, "someone/tiny-flow", saved[1])
    assert torch.equal(zoo.load("hf-hub:someone/tiny-flow").sample(2, seed=1), saved[0].sample(2, seed=1))
    with pytest.raises(UnknownModelError, match="someone/uncached is not available offline.*Hugging Face cache"):
        zoo.load("hf-hub:someone/uncached")


def test_model_cards_index_is_in_sync_with_checkpoints():
    from zoo.registry import checkpoints_dir

    index = checkpoints_dir().parent / "MODEL_CARDS.md"
    assert index.read_text() == model_cards_index(checkpoints_dir()), "run `dpzoo model-cards` to regenerate"


def test_model_cards_index_lists_each_checkpoint(saved, tmp_path):
    shutil.copytree(saved[1], tmp_path / "tiny-flow")
    table = model_cards_index(tmp_path)
    assert "[tiny-flow](checkpoints/tiny-flow/README.md) | dp-lflow | toy-images |" in table


def test_card_model_index_names_the_evaluator(saved, tmp_path):
    result = {
        "task_type": "unconditional-image-generation",
        "dataset_type": "toy",
        "dataset_name": "toy images",
        "metric_type": "fid_toy",
        "metric_name": "FID (toy extractor)",
        "metric_value": 12.5,
        "metric_config": "extractor=toy, 64 samples",
    }
    folder = save_pretrained(
        saved[0], tmp_path / "evaluated", evaluation={"command": "made up for the test", "results": [result]}
    )
    (parsed,) = ModelCard.load(folder / "README.md").data.eval_results
    assert (parsed.metric_type, parsed.metric_value, parsed.metric_config) == (
        "fid_toy",
        12.5,
        "extractor=toy, 64 samples",
    )


def test_card_shows_per_class_results(saved, tmp_path):
    result = {"task_type": "image-generation", "dataset_type": "toy", "dataset_name": "toy", "metric_type": "ood_auroc"}
    evaluation = {
        "command": "made up for the test",
        "results": [dict(result, metric_value=0.75)],
        "details": {"results": {"ood_auroc": {"value": 0.75, "per_class": {0: 0.5, 1: 1.0}}}},
    }
    card = (save_pretrained(saved[0], tmp_path / "per-class", evaluation=evaluation) / "README.md").read_text()
    assert "| class | 0 | 1 | mean |" in card
    assert "| ood_auroc | 0.500 | 1.000 | 0.750 |" in card


def test_a_loaded_shipped_model_saves_with_default_arguments(tmp_path):
    """DP-LFlow's coupling masks share memory in models built before the masks were copied."""
    model = zoo.load("dp-lflow-mnist-digit3-eps10")
    folder = save_pretrained(model, tmp_path / "again")
    assert torch.equal(from_pretrained(folder).sample(4, seed=0), model.sample(4, seed=0))


def test_a_failed_save_leaves_no_half_written_folder(saved, tmp_path, monkeypatch):
    model, _ = saved

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(type(model), "sample_picture", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        save_pretrained(model, tmp_path / "new")
    assert not (tmp_path / "new").exists() and list(tmp_path.iterdir()) == []


def test_a_failed_save_over_an_existing_folder_keeps_it_whole(saved, tmp_path, monkeypatch):
    model, _ = saved
    folder = save_pretrained(model, tmp_path / "kept")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    monkeypatch.setattr("zoo.hub.model_card", lambda *args: (_ for _ in ()).throw(RuntimeError("interrupted")))
    with pytest.raises(RuntimeError, match="interrupted"):
        save_pretrained(model, folder, weights_dtype="float16")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept"]


def test_card_states_the_neighbouring_relation_and_that_the_dataset_size_is_public(saved):
    """The ledger publishes N and DP-SGD divides by q·N: the card must say N is not protected."""
    _, folder = saved
    privacy = ModelCard.load(folder / "README.md").data.to_dict()["privacy"]
    assert privacy["neighbouring_relation"] == "add or remove one training record"
    assert "number of training records" in privacy["public"]
    text = (folder / "README.md").read_text()
    assert "Treated as public, as in Opacus: the number of training records" in text
