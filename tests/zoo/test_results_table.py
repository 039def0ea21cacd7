"""MODEL_CARDS.md's results table: the shipped checkpoints' measured numbers beside DPImageBench's for the same
method, dataset and ε, with the protocols, and only checkpoints with an (ε, δ)."""

import re

import pytest

from tests.scripts import load_script
from zoo.release.literature import DPIMAGEBENCH, SOUND_EPSILON_COMMAND, dpimagebench
from zoo.release.registry import checkpoints_dir
from zoo.release.results_table import results_table, sound_epsilon_table


def test_each_row_holds_the_cards_numbers_beside_the_published_ones():
    folders = sorted(p.parent for p in checkpoints_dir().glob("*/config.json"))
    table = "\n".join(results_table(folders))
    row = next(line for line in table.splitlines() if line.startswith("| [dp-merf-mnist-eps10]"))
    cells = [cell.strip() for cell in row.split("|")[1:-1]]
    assert cells[1:3] == ["mnist", "9.9957"] and cells[3].startswith("89.0 ± 0.3")
    assert cells[4] == "—", "no ResNet CAS for digits"
    assert cells[5].startswith("70.4 (LeNet; 10,000 vs mnist official test split)")
    assert cells[6:8] == ["81.3", "106.3"]
    cifar = next(line for line in table.splitlines() if line.startswith("| [dp-merf-cifar10-eps10]"))
    resnet = [cell.strip() for cell in cifar.split("|")[1:-1]][4]
    assert re.fullmatch(r"\d+\.\d ± \d\.\d \[62\.5\]", resnet), "the ResNet CAS beside its real-data reference"
    assert "dp-merf-cifar10-public-base" not in table and "p3dm" not in table, "no (ε, δ): no row"
    assert "*not a DP number*: DPImageBench's DP-Kernel port" in table
    assert "against its sensitive training set" in table and "never the protected training set" in table


def test_published_numbers_are_matched_at_the_epsilon_a_checkpoint_rounds_to():
    assert dpimagebench("dp-merf", "cifar10", 9.9957) is DPIMAGEBENCH[("dp-merf", "cifar10", 10)]
    assert dpimagebench("dp-merf", "cifar10", 0.9931).fid is None
    assert dpimagebench("dp-merf", "cifar10", 4.0) is None and dpimagebench("dp-lflow", "mnist", 1.0) is None


def test_dpimagebench_gs_wgan_rows_carry_the_sound_epsilon_that_the_named_command_computes():
    """The quoted sound ε comes from DPImageBench's own settings through the zoo's accountants, by the script the
    table names; the stated ε is shown as not a guarantee."""
    script = load_script(SOUND_EPSILON_COMMAND.split()[-1])
    for stated in (1, 10):
        computed = script.epsilons(stated)
        for dataset in ("mnist", "fashion_mnist"):
            published = DPIMAGEBENCH[("gs-wgan", dataset, stated)]
            assert published.sound_epsilon == pytest.approx(computed["sound_pld"], abs=0.5)
            assert published.worst_record_epsilon == pytest.approx(computed["every_query"], rel=0.01)
            assert computed["sound_pld"] > 30 * stated
    table = "\n".join(sound_epsilon_table())
    assert f"`{SOUND_EPSILON_COMMAND}`" in table and "| gs-wgan | mnist | 10 | 2,723 | 1.5e+06 | 75.3 | 47.7 |" in table
