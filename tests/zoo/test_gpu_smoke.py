"""The GPU smoke run's CPU dry run (``benchmarks/gpu/smoke.py --device cpu --tiny``): every part runs and passes,
and its one JSON report names every check, so the script is known to work before a GPU machine runs it."""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.hang_limits import hang_limit
from zoo.methods import registered_methods

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "benchmarks" / "gpu" / "smoke.py"


def test_the_cpu_dry_run_of_the_gpu_smoke_run_passes(tmp_path):
    out = tmp_path / "smoke.json"
    env = {key: value for key, value in os.environ.items() if key != "OUT"}
    run = subprocess.run(
        [sys.executable, str(SMOKE), "--device", "cpu", "--tiny", "--out", str(out)],
        cwd=tmp_path,  # the script finds the repository from its own path
        env=env,
        capture_output=True,
        text=True,
        timeout=hang_limit(20),  # seconds on 2 cores shared with two trainings
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    report = json.loads(out.read_text())
    assert report["passed"] and report["arguments"]["tiny"]
    checks = {check["name"]: check for check in report["checks"]}
    for name in (
        "environment",
        "registry",
        *(
            f"clipping/{engine}/{context}"
            for engine in ("ghost", "hooks", "functorch", "sanitizer")
            for context in ("bf16-autocast", "fp32")
        ),
        "tf32/ghost-conv",
        "refusal/16-mixed",
        "fid/lenet",
    ):
        assert checks[name]["status"] in ("pass", "skipped"), checks[name]
    trained = [name for name, check in checks.items() if name.startswith("train/") and check["status"] == "pass"]
    assert {name.split("/")[2] for name in trained} == {"32-true", "bf16-mixed"}
    for method in registered_methods():  # each method is trained, or named as left out of the tiny run
        assert {f"train/{method}/32-true", f"train/{method}/bf16-mixed"} <= set(checks)
    assert "report:" in run.stdout
