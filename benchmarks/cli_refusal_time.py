"""Time a refusal of ``dpzoo train`` as a user meets it: ``dpzoo train FOLDER --method dp-merf --epsilon 0`` in a
fresh process each time, Python's start-up included (issue 55: under 3 s on an idle machine; the options are checked
before torch and Lightning are imported, ``zoo.front_checks``).

    python benchmarks/cli_refusal_time.py [--runs 3]

Prints each run's wall time and the best, and fails if the command did not refuse in one line.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

from list_time import dpzoo_command  # beside this script

REFUSAL = "dpzoo train: error: --epsilon must be a finite number > 0, got 0.0"


def time_once(command: list[str]) -> float:
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 2 or result.stderr.strip() != REFUSAL:
        raise SystemExit(f"expected the one-line refusal {REFUSAL!r}, got {result.returncode}: {result.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for name in ("cats", "dogs"):
            (Path(folder) / name).mkdir()
        command = [*dpzoo_command(), "train", folder, "--method", "dp-merf", "--epsilon", "0"]
        print(f"timing `dpzoo train FOLDER --method dp-merf --epsilon 0` ({command[0]})")
        times = [time_once(command) for _ in range(args.runs)]
    print("runs: " + ", ".join(f"{t:.2f} s" for t in times))
    print(f"best: {min(times):.2f} s")


if __name__ == "__main__":
    main()
