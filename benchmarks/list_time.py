"""Time ``dpzoo list`` as a user runs it: a fresh process each time, Python's start-up included.

    python benchmarks/list_time.py [--runs 3] [--verify]

Prints each run's wall time and the best; ``--verify`` times ``dpzoo list --verify`` instead (every
guarantee recomputed from its ledger).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path


def dpzoo_command() -> list[str]:
    """The installed ``dpzoo`` beside this interpreter, else the CLI module run by this interpreter."""
    script = Path(sys.executable).with_name("dpzoo")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "zoo.cli"]


def time_once(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--verify", action="store_true", help="time `dpzoo list --verify`")
    args = parser.parse_args()
    command = [*dpzoo_command(), "list", *(["--verify"] if args.verify else [])]
    print(f"timing `{' '.join([Path(command[0]).name, *command[1:]])}` ({shutil.which(command[0]) or command[0]})")
    times = [time_once(command) for _ in range(args.runs)]
    print("runs: " + ", ".join(f"{t:.2f} s" for t in times))
    print(f"best: {min(times):.2f} s")


if __name__ == "__main__":
    main()
