"""``dpzoo audit``: a shipped model's ledger audited end to end, the refusals before any audit runs, and every
shipped method's model audited in the heavy suite (ε̂ at most the ε each plan states)."""

import re

import pytest

from zoo.auditing.ledger_audit import ledger_plans
from zoo.cli import main
from zoo.release.layout import load_config
from zoo.release.registry import checkpoints_dir

#: one shipped model per method (the barriers B1, B1′, B2, B3 and B4 among them)
ONE_PER_METHOD = (
    "dp-merf-mnist-eps1",
    "dp-mepf-mnist-eps10",
    "dp-kernel-mnist-eps1",
    "dp-lflow-mnist-eps10",
    "dp-nf-half-moons-eps1",
    "dp2-vae-mnist-eps10",
    "private-set-mnist-eps10",
    "gs-wgan-mnist-eps10000",
)


def audited(capsys, *argv: str) -> tuple[int, str]:
    status = main(["audit", *argv])
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def test_a_one_shot_release_is_audited_beside_its_epsilon_and_nothing_is_written(capsys, tmp_path):
    folder = checkpoints_dir() / "dp-merf-mnist-eps1"
    before = {path.name: path.stat().st_mtime_ns for path in folder.iterdir()}
    status, out = audited(capsys, "dp-merf-mnist-eps1", "--canaries", "500")
    assert status == 0
    assert re.search(r"ε̂ [\d.]+ beside the plan's own ε 0\.9931", out)
    assert "refutes the guarantee" in out and "Nothing was written" in out
    assert {path.name: path.stat().st_mtime_ns for path in folder.iterdir()} == before


def test_method_and_epsilon_pick_the_nearest_listed_model(capsys):
    status, out = audited(capsys, "--method", "dp-merf", "--epsilon", "1.2", "--canaries", "200")
    assert status == 0 and re.search(r"auditing dp-merf-[\w-]+-eps1 ", out)


@pytest.mark.parametrize(
    "argv, message",
    [
        ((), "name a model"),
        (("dp-merf-mnist-eps1", "--method", "dp-merf", "--epsilon", "1"), "not both"),
        (("--method", "dp-merf"), "give --method with --epsilon"),
        (("--method", "no-such-method", "--epsilon", "1"), "no (ε, δ)-DP model of 'no-such-method'"),
        (("p3dm-mnist",), "PAC-private"),
        (("dp-merf-mnist-eps1", "--canaries", "1"), "at least 2 canaries"),
        (("dp-merf-mnist-eps1", "--confidence", "1.5"), "between 0 and 1"),
    ],
)
def test_refusals_name_the_problem_before_any_audit(capsys, argv, message):
    status, out = audited(capsys, *argv)
    assert status == 2 and message in out and "canaries ..." not in out


def test_a_per_class_model_audits_each_distinct_plan_once():
    config = load_config(checkpoints_dir() / "dp-lflow-mnist-eps10")
    plans = ledger_plans(config)
    assert sum(plans.values()) == len(config["privacy_ledger"]["entries"]) and len(plans) < sum(plans.values())


@pytest.mark.heavy
@pytest.mark.parametrize("model_id", ONE_PER_METHOD)
def test_every_shipped_method_passes_its_audit(capsys, model_id):
    status, out = audited(capsys, model_id, "--canaries", "200")
    assert status == 0, out
    assert out.count("beside the plan's own ε") == len(ledger_plans(load_config(checkpoints_dir() / model_id)))
