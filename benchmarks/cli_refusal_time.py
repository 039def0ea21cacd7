"""Time the command line's refusals and help as a user meets them, each in a fresh process (Python's start-up
included), against `dpzoo --help` on the same machine at the same moment: the ratio says how much a refusal costs
beyond starting Python, whatever the machine's load (issue 68: a refusal that needs no weights comes before torch is
imported, within about a second on an idle machine).

    python benchmarks/cli_refusal_time.py [--runs 3]

Prints each case's best wall time (for `dpzoo fit --help`, until its own usage line) and its ratio to `dpzoo --help`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

from list_time import dpzoo_command  # beside this script
from PIL import Image


def time_once(argv: list[str], expect: str, env: dict[str, str]) -> float:
    """Seconds until ``expect`` appears on the command's stdout or stderr (the whole run when it ends first)."""
    start = time.perf_counter()
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env) as process:
        assert process.stdout is not None
        for line in process.stdout:
            if expect in line:
                elapsed = time.perf_counter() - start
                process.kill()
                return elapsed
    raise SystemExit(f"`{' '.join(argv)}` never printed {expect!r}")


def cases(folder: Path) -> dict[str, tuple[list[str], str]]:
    """Each case's arguments and a line it must print: the table of issue 68, then the quick ones around it."""
    one_class = folder / "one-class"
    (one_class / "cats").mkdir(parents=True)
    (one_class / "cats" / "tabby.png").write_bytes(b"")
    for name in ("cats", "dogs"):
        (folder / "two" / name).mkdir(parents=True)
        (folder / "two" / name / "a.png").write_bytes(b"")
        (folder / "texts" / name).mkdir(parents=True)
        (folder / "texts" / name / "notes.txt").write_text("not an image")
        (folder / "large" / name).mkdir(parents=True)
        for index in range(300):  # a few hundred photos per class, larger than the base draws
            Image.new("RGB", (96, 96)).save(folder / "large" / name / f"{index}.png")
    (folder / "scans.csv").write_text("file,diagnosis\n" + "".join(f"scans/{i}.png,benign\n" for i in range(600)))
    train = ["--method", "dp-merf", "--epsilon", "1"]
    push = ["push", "dp-merf-mnist-eps1", "me/model"]
    return {
        "dpzoo --help": (["--help"], "usage: dpzoo"),
        "train a one-class folder": (["train", str(one_class), *train], "error"),
        "train a folder of non-images": (["train", str(folder / "texts"), *train], "error"),
        "train --init-from a base of another shape (600 images)": (
            ["train", str(folder / "large"), *train, "--init-from", "dp-merf-cifar10-public-base"],
            "error",
        ),
        "train --init-from a base, --channels of another": (
            ["train", str(folder / "two"), *train, "--init-from", "dp-merf-cifar10-public-base", "--channels", "1"],
            "error",
        ),
        "train a table of 600 rows, a column it lacks": (
            ["train", str(folder / "scans.csv"), *train, "--label-column", "label"],
            "has no column 'label'",
        ),
        "push without a token": (push, "error"),
        "push with no network": ([*push, "--token", "hf_mine"], "error"),
        "evaluate --help": (["evaluate", "--help"], "usage: dpzoo evaluate"),
        "fit --help (its own usage)": (["fit", "--help"], "usage: dpzoo fit"),
        "train --help": (["train", "--help"], "usage: dpzoo train"),
        "train --epsilon 0": (["train", str(folder / "two"), *train[:3], "0"], "--epsilon must be a finite number > 0"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    command = dpzoo_command()
    with tempfile.TemporaryDirectory() as folder:
        # no saved login and a Hub that nothing answers, so that the push cases are refusals on any machine
        env = {**os.environ, "HF_HOME": str(Path(folder) / "hf-home"), "HF_ENDPOINT": "http://127.0.0.1:9"}
        env.pop("HF_TOKEN", None)
        measured = {
            name: min(time_once([*command, *argv], expect, env) for _ in range(args.runs))
            for name, (argv, expect) in cases(Path(folder)).items()
        }
    reference = measured["dpzoo --help"]
    print(f"| case | best of {args.runs} (s) | × dpzoo --help |")
    print("|---|---|---|")
    for name, seconds in measured.items():
        print(f"| {name} | {seconds:.2f} | {seconds / reference:.1f} |")


if __name__ == "__main__":
    main()
