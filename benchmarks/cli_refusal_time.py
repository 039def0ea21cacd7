"""Time the command line's refusals and help as a user meets them, each in a fresh process (Python's start-up
included), against `dpzoo --help` on the same machine at the same moment: the ratio says how much a refusal costs
beyond starting Python, whatever the machine's load (issue 68: a refusal that needs no weights comes before torch is
imported, within about a second on an idle machine).

    python benchmarks/cli_refusal_time.py [--runs 3]

Prints each case's best wall time (for `dpzoo fit --help`, until its own usage line) and its ratio to `dpzoo --help`.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

from list_time import dpzoo_command  # beside this script


def time_once(argv: list[str], expect: str) -> float:
    """Seconds until ``expect`` appears on the command's stdout or stderr (the whole run when it ends first)."""
    start = time.perf_counter()
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as process:
        assert process.stdout is not None
        for line in process.stdout:
            if expect in line:
                elapsed = time.perf_counter() - start
                process.kill()
                return elapsed
    raise SystemExit(f"`{' '.join(argv)}` never printed {expect!r}")


def cases(folder: Path) -> dict[str, tuple[list[str], str]]:
    """Each case's arguments and a line it must print."""
    one_class = folder / "one-class"
    (one_class / "cats").mkdir(parents=True)
    for name in ("cats", "dogs"):
        (folder / "two" / name).mkdir(parents=True)
    return {
        "dpzoo --help": (["--help"], "usage: dpzoo"),
        "train --epsilon 0": (
            ["train", str(folder / "two"), "--method", "dp-merf", "--epsilon", "0"],
            "--epsilon must be a finite number > 0",
        ),
        "train --release-size unknown": (
            ["train", str(folder / "two"), "--method", "dp-mepf", "--epsilon", "1", "--release-size", "huge"],
            "--release-size for dp-mepf is one of",
        ),
        "train a one-class folder": (["train", str(one_class), "--method", "dp-merf", "--epsilon", "1"], "error"),
        "evaluate --help": (["evaluate", "--help"], "usage: dpzoo evaluate"),
        "train --help": (["train", "--help"], "usage: dpzoo train"),
        "fit --help (its own usage)": (["fit", "--help"], "usage: dpzoo fit"),
        "push without a token": (["push", "dp-merf-mnist-eps1", "me/model"], "error"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    command = dpzoo_command()
    with tempfile.TemporaryDirectory() as folder:
        measured = {
            name: min(time_once([*command, *argv], expect) for _ in range(args.runs))
            for name, (argv, expect) in cases(Path(folder)).items()
        }
    reference = measured["dpzoo --help"]
    print(f"| case | best of {args.runs} (s) | × dpzoo --help |")
    print("|---|---|---|")
    for name, seconds in measured.items():
        print(f"| {name} | {seconds:.2f} | {seconds / reference:.1f} |")


if __name__ == "__main__":
    main()
