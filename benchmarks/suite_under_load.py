"""The test suite's wall time on this machine, idle and under load: the figures the README and DEVELOPERS.md quote.

Runs the default suite (``pytest -n 2``, as ``make test``) once on the idle machine and once beside ``--busy``
processes that each keep a core busy (``python -c 'while True: pass'``, at the suite's priority), and prints each
run's wall time, its counts and any failure. The idle run also prints the slowest tests. ``--heavy`` adds the
heavy suite's idle time. Run it on an otherwise idle machine: stop trainings first.

    python benchmarks/suite_under_load.py [--busy 2] [--heavy] [--phases idle loaded]

A test that fails only under load is a defect: no test may depend on the machine's speed
(``tests/test_no_wall_clock.py``); subprocess limits scale with ``DPZOO_TEST_TIMEOUT_SCALE``.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SLOWEST = 15


@dataclass
class SuiteRun:
    """One pytest run: what ran, how long it took and what it reported."""

    name: str
    seconds: float
    summary: str
    failures: list[str]
    slowest: list[str]
    returncode: int

    @property
    def passed(self) -> bool:
        return self.returncode == 0


@contextlib.contextmanager
def busy_cores(count: int) -> Iterator[None]:
    """``count`` processes that each spin a core for as long as the block runs."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def run_suite(name: str, marker: str | None) -> SuiteRun:
    """``pytest -n 2`` (with ``-m marker``), timed from the outside."""
    command = [sys.executable, "-m", "pytest", "-n", "2", "-q", f"--durations={SLOWEST}", "-p", "no:cacheprovider"]
    command += ["-m", marker] if marker else []
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    seconds = time.monotonic() - started
    lines = done.stdout.splitlines()
    summaries = [line.strip("= ") for line in lines if re.search(r"\d+ (passed|failed|error)", line)]
    slowest = [line for line in lines if re.match(r"\d+\.\d+s (call|setup|teardown) ", line)]
    return SuiteRun(
        name=name,
        seconds=seconds,
        summary=summaries[-1] if summaries else (done.stderr.strip().splitlines() or ["no summary"])[-1],
        failures=[line for line in lines if line.startswith(("FAILED", "ERROR"))],
        slowest=slowest[:SLOWEST],
        returncode=done.returncode,
    )


def report(runs: list[SuiteRun]) -> None:
    print("| run | wall time | pytest's summary |")
    print("|---|---|---|")
    for run in runs:
        print(f"| {run.name} | {run.seconds / 60:.1f} min ({run.seconds:.0f} s) | {run.summary} |")
    for run in runs:
        if run.failures:
            print(f"\n{run.name}: {len(run.failures)} failed")
            print("\n".join(f"  {failure}" for failure in run.failures))
        if run.slowest and "idle" in run.name:
            print(f"\n{run.name}: the {len(run.slowest)} slowest")
            print("\n".join(f"  {line}" for line in run.slowest))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--busy", type=int, default=2, help="busy processes beside the loaded run (default 2)")
    parser.add_argument("--heavy", action="store_true", help="also time the heavy suite, idle")
    parser.add_argument("--phases", nargs="+", choices=["idle", "loaded"], default=["idle", "loaded"])
    args = parser.parse_args()
    if args.busy < 1:
        parser.error("--busy is a number of processes, at least 1")

    runs = []
    if "idle" in args.phases:
        runs.append(run_suite("default suite, idle", None))
        if args.heavy:
            runs.append(run_suite("heavy suite, idle", "heavy"))
    if "loaded" in args.phases:
        with busy_cores(args.busy):
            runs.append(run_suite(f"default suite beside {args.busy} busy processes", None))
    report(runs)
    return 0 if all(run.passed for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
