"""save_pretrained → card → from_pretrained, loading by id/folder/Hub cache, and bad folders."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import torch
from huggingface_hub import ModelCard, constants
from safetensors.torch import load_file
from torch.utils.data import TensorDataset

import zoo
from lightning_modules import DPLFlow
from tests.toys import ToyData, tiny_trainer
from zoo.errors import UnknownModelError
from zoo.privacy import DPCallback
from zoo.release.cards import VACUOUS_EPSILON
from zoo.release.hub import CheckpointError, SaveTargetError, check_save_target, from_pretrained, save_pretrained
from zoo.release.index import model_cards_index

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


def test_a_card_says_plainly_when_its_epsilon_protects_no_one(tmp_path):
    model = DPLFlow(**TINY)
    callback = DPCallback(noise_multiplier=0.3, max_grad_norm=0.1, accountant="rdp")
    images = TensorDataset(torch.rand(64, 1, 8, 8, generator=torch.Generator().manual_seed(0)), torch.zeros(64))
    tiny_trainer([callback], 40).fit(model, ToyData(images, 0.9, "toy-images"))
    assert model.privacy_ledger.epsilon("toy-images") > VACUOUS_EPSILON
    card = (save_pretrained(model.eval(), tmp_path / "vacuous") / "README.md").read_text()
    assert "protects no one" in card
    assert "protects no one" not in (save_pretrained(tiny_private_flow(), tmp_path / "flow") / "README.md").read_text()


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


def test_corrupt_weights_in_a_local_folder_say_to_re_save_it(saved, tmp_path):
    with pytest.raises(CheckpointError, match="corrupt or truncated.*re-save the model") as error:
        from_pretrained(broken_copy(saved, tmp_path, truncate_weights))
    assert "download it again" not in str(error.value)


def test_corrupt_weights_in_the_hub_cache_say_which_cache_folder_to_delete(saved, tmp_path, monkeypatch):
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    populate_hub_cache(tmp_path, "someone/tiny-flow", saved[1])
    snapshot = tmp_path / "models--someone--tiny-flow" / "snapshots" / ("0" * 40)
    truncate_weights(snapshot)
    with pytest.raises(
        CheckpointError, match="corrupt or truncated.*download it again: delete .*models--someone--tiny-flow,"
    ):
        from_pretrained(snapshot)


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
    with pytest.raises(UnknownModelError, match=r"unknown model 'nope': .*zoo\.list_models\(\) shows the ids"):
        zoo.load("nope")


def test_an_unknown_id_is_answered_from_names_alone(saved, tmp_path, monkeypatch):
    """No Hub call and no guarantee computed (list_models recomputes every checkpoint's ε: tens of seconds)."""
    shutil.copytree(saved[1], tmp_path / "tiny-flow")
    monkeypatch.setenv("DPZOO_CHECKPOINTS_DIR", str(tmp_path))
    published = {"published-flow": {"hub_repo": "someone/published-flow"}}
    monkeypatch.setattr("zoo.release.registry.model_index", lambda: published)
    monkeypatch.setattr("zoo.release.loading.model_index", lambda: published)
    monkeypatch.setattr("zoo.release.loading.snapshot_download", lambda *a, **k: pytest.fail("the Hub was called"))
    monkeypatch.setattr("zoo.privacy.PrivacyLedger.guarantees", lambda self: pytest.fail("a guarantee was computed"))
    with pytest.raises(UnknownModelError, match=r"unknown model 'tiny-flo' \(did you mean tiny-flow\?\)"):
        zoo.load("tiny-flo")


def test_a_published_id_is_fetched_from_the_hub(saved, tmp_path, monkeypatch):
    monkeypatch.setenv("DPZOO_CHECKPOINTS_DIR", str(tmp_path))
    published = {"published-flow": {"hub_repo": "someone/published-flow"}}
    monkeypatch.setattr("zoo.release.loading.model_index", lambda: published)
    fetched = []
    download = lambda repo_id, **kwargs: fetched.append(repo_id) or saved[1]  # noqa: E731
    monkeypatch.setattr("zoo.release.loading.snapshot_download", download)
    assert torch.equal(zoo.load("published-flow").sample(2, seed=0), saved[0].sample(2, seed=0))
    assert fetched == ["someone/published-flow"]


def test_an_unknown_id_fails_without_importing_torch(tmp_path):
    """Importing torch, Lightning and the accountants takes seconds: a typo must not wait for them."""
    probe = (
        "import sys, zoo\n"
        "from zoo.errors import UnknownModelError\n"
        "try:\n    zoo.load('no-such-model')\nexcept UnknownModelError:\n    pass\n"
        "print(sorted(m for m in ('torch', 'pytorch_lightning', 'opacus') if m in sys.modules))"
    )
    env = {**os.environ, "DPZOO_CHECKPOINTS_DIR": str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env)
    assert result.stdout.strip() == "[]"


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
    from zoo.release.registry import checkpoints_dir

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
        "metric_type": "fid",
        "metric_name": "FID (toy extractor)",
        "metric_value": 12.5,
        "metric_config": "extractor=toy, 64 samples",
    }
    folder = save_pretrained(
        saved[0], tmp_path / "evaluated", evaluation={"command": "made up for the test", "results": [result]}
    )
    (parsed,) = ModelCard.load(folder / "README.md").data.eval_results
    assert (parsed.metric_type, parsed.metric_value, parsed.metric_config) == (
        "fid",
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
    monkeypatch.setattr("zoo.release.hub.model_card", lambda *args: (_ for _ in ()).throw(RuntimeError("interrupted")))
    with pytest.raises(RuntimeError, match="interrupted"):
        save_pretrained(model, folder, weights_dtype="float16", overwrite=True)
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


@pytest.mark.parametrize("existing", ["config.json", "model.safetensors"])
def test_save_refuses_a_folder_that_holds_a_model_unless_overwrite(saved, tmp_path, existing):
    model, folder = saved
    target = tmp_path / "taken"
    target.mkdir()
    shutil.copy2(folder / existing, target / existing)
    with pytest.raises(SaveTargetError, match="taken already holds a model; pass overwrite=True"):
        save_pretrained(model, target)
    assert [p.name for p in target.iterdir()] == [existing]
    save_pretrained(model, target, overwrite=True)
    assert torch.equal(from_pretrained(target).sample(2, seed=0), model.sample(2, seed=0))


def test_check_save_target_accepts_a_new_or_empty_folder(tmp_path):
    (tmp_path / "empty").mkdir()
    assert check_save_target(tmp_path / "empty") == tmp_path / "empty"
    assert check_save_target(str(tmp_path / "new" / "nested")) == tmp_path / "new" / "nested"
    assert not (tmp_path / "new").exists()


def test_check_save_target_refuses_a_file_on_the_way(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(SaveTargetError, match="file.*it is a file, not a folder"):
        check_save_target(tmp_path / "file")
    with pytest.raises(SaveTargetError, match="file/model: .*file is a file, not a folder"):
        check_save_target(tmp_path / "file" / "model", overwrite=True)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_save_into_a_read_only_folder_fails_with_one_clear_error(saved, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        for target in (locked / "model", locked / "deeper" / "model"):
            message = re.escape(f"cannot save a model to {target}: {locked} is not writable")
            with pytest.raises(SaveTargetError, match=message):
                save_pretrained(saved[0], target)
    finally:
        locked.chmod(0o700)
