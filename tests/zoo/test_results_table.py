"""MODEL_CARDS.md's results table: the shipped checkpoints' measured numbers beside DPImageBench's for the same
method, dataset and ε, with the protocols, and only checkpoints with an (ε, δ)."""

import re

from zoo.release.literature import DPIMAGEBENCH, dpimagebench
from zoo.release.registry import checkpoints_dir
from zoo.release.results_table import results_table


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
