"""Bad input to `dpzoo train`, `sample` and `evaluate` is refused in one line before torch is imported (issue 55:
each refusal took a minute or more of heavy imports on a loaded machine, and labels were checked only after the
model's weights were read). Every refusal runs in one fresh process that reports, after each, whether torch is
loaded. Each names the command's flags, never the Python API's arguments or a Python list."""

import json
import os
import subprocess
import sys

import pytest
from PIL import Image

PROBE = """
import json, sys
from zoo.cli import main
for argv in json.loads(sys.argv[1]):
    try:
        code = main(argv)
    except SystemExit as exit:  # argparse's own type and choice checks
        code = exit.code
    print(json.dumps([code, "torch" in sys.modules]), flush=True)
"""


def refusals(tmp_path):
    """(argv, the words of its one-line refusal)."""
    photos = tmp_path / "photos"
    for name in ("cats", "dogs"):
        (photos / name).mkdir(parents=True)
    notes = tmp_path / "notes"
    notes.mkdir()
    texts = tmp_path / "texts"
    for name in ("letters", "memos"):
        (texts / name).mkdir(parents=True)
        (texts / name / "a.txt").write_text("not an image")
    (notes / "notes.txt").write_text("mine")
    large = tmp_path / "large"
    for name in ("cats", "dogs"):
        (large / name).mkdir(parents=True)
        Image.new("RGB", (48, 48)).save(large / name / "a.png")
    one_class = tmp_path / "one-class" / "cats"
    one_class.mkdir(parents=True)
    (one_class / "tabby.png").write_bytes(b"")  # not read: the class count alone refuses it
    (tmp_path / "file").write_text("")
    (tmp_path / "scans.csv").write_text("file,diagnosis\nscans/a.png,benign\n")
    trained = tmp_path / "trained"
    trained.mkdir()
    (trained / "model.safetensors").write_bytes(b"")
    train = ["train", str(photos), "--method", "dp-merf", "--epsilon"]
    cases = [
        ([*train, "0"], "--epsilon must be a finite number > 0, got 0.0"),
        ([*train, "inf"], "--epsilon must be a finite number > 0, got inf"),
        ([*train, "1", "--delta", "1"], "--delta must lie in (0, 1), got 1.0"),
        ([*train, "1", "--delta", "0"], "--delta must lie in (0, 1), got 0.0"),
        ([*train, "1", "--max-steps", "0"], "--max-steps must be a positive integer, got 0"),
        ([*train, "1", "--max-time", "ten minutes"], "--max-time is a duration such as 90s"),
        ([*train, "1", "--image-size", "-4"], "--image-size must be a positive integer, got -4"),
        ([*train, "1", "--channels", "2"], "argument --channels: invalid choice: 2"),
        ([*train[:3], "dp-mref", "--epsilon", "1"], "--method dp-mref (did you mean dp-merf"),
        ([*train, "1", "--out", str(notes)], "it holds files that are not a model's (notes.txt)"),
        ([*train, "1", "--out", str(tmp_path / "file" / "model")], "file is a file, not a folder"),
        ([*train, "1", "--out", str(trained)], "already holds a model; pass --overwrite to replace it"),
        ([*train, "1", "--init-from", "no-such-base"], "unknown model 'no-such-base'"),
        ([*train, "1", "--shared-part", "0.5"], "--shared-part applies to dp-mepf, not to dp-merf"),
        (["train", str(tmp_path / "missing"), *train[2:], "1"], f"no image folder at {tmp_path / 'missing'}"),
        (
            ["train", str(tmp_path / "scans.csv"), *train[2:], "1"],
            "scans.csv has no column 'label' (its columns: file, diagnosis): name it with label_column (dpzoo train "
            "--label-column)",
        ),
        (
            ["train", str(tmp_path / "scans.csv"), *train[2:], "1", "--image-column", "scan"],
            "scans.csv has no column 'scan' (its columns: file, diagnosis)",
        ),
        (["train", str(tmp_path / "file"), *train[2:], "1"], "file is a file of none of the kinds dpzoo reads"),
        (["train", str(texts), *train[2:], "1"], "2 class folders hold no images (.png, .jpg, .jpeg, .bmp, .webp)"),
        (["train", str(one_class.parent), *train[2:], "1"], "one class (cats): dp-merf is class-conditional"),
        (
            ["train", str(large), *train[2:], "1", "--init-from", "dp-merf-cifar10-public-base"],
            "the images are 48×48, but the base dp-merf-cifar10-public-base was fitted to 32×32 images",
        ),
        (
            [*train, "1", "--init-from", "dp-merf-cifar10-public-base", "--channels", "1"],
            "the images would be read as grey 32×32, but the base dp-merf-cifar10-public-base takes RGB 32×32 "
            "images: pass --image-size 32 --channels 3 or train without --init-from",
        ),
        (["sample", "dp-merf-mnist-eps2"], "unknown model 'dp-merf-mnist-eps2' (did you mean dp-merf-mnist-eps1"),
        (["sample", "dp-merf-mnist-eps1", "--labels", "three"], "--labels must be comma-separated class indices"),
        (["sample", "dp-merf-mnist-eps1", "--n", "2", "--labels", "3,10"], "--labels must lie in 0..9"),
        (["sample", "dp-merf-mnist-eps1", "--n", "0"], "--n must be a positive integer, got 0"),
        (["evaluate", "dp-merf-mnist-eps10x"], "unknown model 'dp-merf-mnist-eps10x' (did you mean"),
        (["evaluate", "dp-merf-mnist-eps1", "--label", "10"], "--label must lie in 0..9 (the model's 10 classes)"),
        (["push", "dp-merf-mnist-eps2", "me/model"], "unknown model 'dp-merf-mnist-eps2' (did you mean"),
        (["evaluate", "dp-merf-cifar10-public-base"], "--dataset is needed: dp-merf-cifar10-public-base was trained"),
    ]
    if os.geteuid() != 0:  # root writes into read-only folders
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        cases.append(([*train, "1", "--out", str(locked / "model")], f"{locked} is not writable"))
    return cases


def test_every_refusal_comes_before_torch_is_imported(tmp_path):
    cases = refusals(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "DPZOO_CHECKPOINTS_DIR"}  # the shipped models
    argvs = json.dumps([argv for argv, _ in cases])
    result = subprocess.run([sys.executable, "-c", PROBE, argvs], capture_output=True, text=True, env=env)
    reports = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(reports) == len(cases), result.stderr
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    for (argv, words), (code, torch_loaded), error in zip(cases, reports, errors, strict=True):
        assert code == 2 and words in error, (argv, error)
        assert "=True" not in error and "['" not in error, f"{argv}: the Python API's words on the command line"
        assert not torch_loaded, f"{argv} imported torch before refusing"


@pytest.mark.parametrize("existing", ["notes.txt", ".hidden", "sub-folder"])
def test_a_model_is_never_written_beside_a_foreign_file_even_with_overwrite(tmp_path, existing):
    from zoo.release.save_target import SaveTargetError, check_save_target

    target = tmp_path / "out"
    target.mkdir()
    (target / "config.json").write_text("{}")  # a model's file beside it changes nothing
    (target / existing).mkdir() if existing == "sub-folder" else (target / existing).write_text("mine")
    with pytest.raises(SaveTargetError, match=rf"holds files that are not a model's \({existing}\)"):
        check_save_target(target, overwrite=True)
    readme_only = tmp_path / "readme-only"
    readme_only.mkdir()
    (readme_only / "README.md").write_text("the user's own")
    with pytest.raises(SaveTargetError, match=r"not a model's \(README.md\)"):  # no model here: it is the user's
        check_save_target(readme_only, overwrite=True)


def test_a_push_without_a_token_or_the_network_is_refused_before_torch_is_imported(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DPZOO_CHECKPOINTS_DIR", "HF_TOKEN", "HF_HUB_OFFLINE")}
    env["HF_HOME"] = str(tmp_path / "hf-home")  # no saved login
    env["HF_ENDPOINT"] = "http://127.0.0.1:9"  # nothing listens there: the Hub is unreachable
    push = ["push", "dp-merf-mnist-eps1", "me/model"]
    argvs = json.dumps([push, [*push, "--token", "hf_mine"]])
    result = subprocess.run([sys.executable, "-c", PROBE, argvs], capture_output=True, text=True, env=env)
    assert [json.loads(line) for line in result.stdout.splitlines()] == [[2, False], [2, False]], result.stderr
    assert "no Hugging Face token: pass --token TOKEN" in result.stderr
    assert "cannot reach the Hugging Face Hub: " in result.stderr
