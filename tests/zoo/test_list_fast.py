"""`dpzoo list` reads the guarantee each config.json states (no accountant, no torch, no warning) with headline
metrics; `zoo.load` and `dpzoo list --verify` recompute it from the ledger and refuse a config that states
another."""

import json
import os
import shutil
import subprocess
import sys

import pytest

import zoo
from tests.zoo.test_hub import tiny_private_flow
from zoo.cli import main
from zoo.headline import HEADLINE_KEY, stated_guarantee
from zoo.release.hub import save_pretrained
from zoo.release.layout import CheckpointError, load_config
from zoo.release.registry import checkpoints_dir

RESULT = {"task_type": "image-generation", "dataset_type": "toy", "dataset_name": "toy", "metric_config": "made up"}
EVALUATION = {
    "command": "made up for the test",
    "results": [
        {**RESULT, "metric_type": "fid_lenet", "metric_name": "fid_lenet (lenet)", "metric_value": 12.5},
        {**RESULT, "metric_type": "cas_cnn", "metric_name": "cas_cnn (cnn)", "metric_value": 80.0},
    ],
}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    model = tiny_private_flow()
    return model, save_pretrained(model, tmp_path_factory.mktemp("saved") / "tiny-flow", evaluation=EVALUATION)


@pytest.fixture
def shipped_here(saved, tmp_path, monkeypatch):
    """A checkpoints folder holding a copy of the saved model; returns the copy."""
    copy = tmp_path / "checkpoints" / "tiny-flow"
    shutil.copytree(saved[1], copy)
    monkeypatch.setenv("DPZOO_CHECKPOINTS_DIR", str(copy.parent))
    return copy


def edit_config(folder, change):
    config = load_config(folder)
    change(config)
    (folder / "config.json").write_text(json.dumps(config, indent=2))


def test_listing_the_shipped_models_imports_no_accountant_and_prints_no_warning():
    """Every shipped config.json states its headline; listing reads them in a fresh process with Python's default
    warnings shown, and neither torch nor an accountant is imported."""
    probe = (
        "import sys\nfrom zoo.cli import main\ncode = main(['list'])\n"
        "print(sorted(m for m in ('torch', 'opacus', 'pytorch_lightning', 'dp_accounting') if m in sys.modules))\n"
        "sys.exit(code)"
    )
    env = {k: v for k, v in os.environ.items() if k != "DPZOO_CHECKPOINTS_DIR"}
    result = subprocess.run([sys.executable, "-W", "default", "-c", probe], capture_output=True, text=True, env=env)
    assert result.returncode == 0 and result.stderr == ""
    *table, imported = result.stdout.splitlines()
    assert imported == "[]"
    for folder in sorted(p.parent for p in checkpoints_dir().glob("*/config.json")):
        headline = load_config(folder)[HEADLINE_KEY]
        (row,) = [line for line in table if line.startswith(f"{folder.name} ")]
        assert stated_guarantee(headline) in row and headline["method"] in row


def test_a_row_holds_the_stored_guarantee_and_the_headline_metrics(saved, shipped_here, capsys):
    model, _ = saved
    (row,) = zoo.list_models()
    assert row["epsilon"] == pytest.approx(model.privacy_ledger.epsilon("toy-images"), abs=1e-4)
    assert row["guarantee"] == f"(ε = {row['epsilon']}, δ = 1e-05)-DP" and row["method"] == "dp-lflow"
    assert row["metrics"] == {"fid_lenet": 12.5, "cas_cnn": 80.0}
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    (line,) = [line for line in out.splitlines() if line.startswith("tiny-flow")]
    assert row["guarantee"] in line and "12.5 LeNet" in line and "80.0" in line
    assert "FID" in out.splitlines()[0] and "CAS %" in out.splitlines()[0]


def test_verify_recomputes_every_guarantee_and_finds_them_stated_without_a_warning(shipped_here):
    """In a fresh process with Python's default warnings shown: the accountants' own warnings stay filtered."""
    probe = "import sys\nfrom zoo.cli import main\nsys.exit(main(['list', '--verify']))"
    result = subprocess.run([sys.executable, "-W", "default", "-c", probe], capture_output=True, text=True)
    assert result.returncode == 0 and result.stderr == ""
    assert "verified: each of the 1 local models states the guarantee its ledger gives" in result.stdout
    (row,) = zoo.list_models(verify=True)
    assert row["verified"] is True and row["problem"] is None


def test_a_stated_guarantee_the_ledger_does_not_give_is_flagged_by_verify_and_refused_by_load(shipped_here, capsys):
    stated = load_config(shipped_here)[HEADLINE_KEY]["epsilon"]
    edit_config(shipped_here, lambda config: config[HEADLINE_KEY].update(epsilon=0.01))
    (row,) = zoo.list_models()
    assert row["epsilon"] == 0.01  # listing reads what is stated ...
    (row,) = zoo.list_models(verify=True)  # ... verifying shows the ledger's, and says what differs
    assert row["verified"] is False and row["epsilon"] == stated
    assert row["problem"] == f"epsilon: stored 0.01, ledger gives {stated!r}"
    assert main(["list", "--verify"]) == 1
    captured = capsys.readouterr()
    assert f"tiny-flow: config.json states another guarantee than its ledger gives ({row['problem']})" in captured.err
    assert f"(ε = {stated}, δ = 1e-05)-DP" in captured.out
    with pytest.raises(CheckpointError, match="disagrees with the one recomputed from its privacy ledger"):
        zoo.load("tiny-flow")


def test_a_folder_saved_before_headlines_were_stored_is_listed_from_its_ledger(saved, shipped_here):
    edit_config(shipped_here, lambda config: config.pop(HEADLINE_KEY))
    (row,) = zoo.list_models()
    assert row["epsilon"] == pytest.approx(saved[0].privacy_ledger.epsilon("toy-images"), abs=1e-4)
    assert zoo.list_models(verify=True)[0]["verified"] is True and zoo.load("tiny-flow") is not None
