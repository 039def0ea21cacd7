"""No test depends on the machine's speed: none reads the wall clock, sleeps or sets a subprocess limit of
its own. A limit goes through ``tests.hang_limits.hang_limit`` (ten times the idle time, scaled by an
environment variable), and a rule about time takes a fake clock (``tests/privacy/test_epsilon_logging.py``)."""

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CLOCK = re.compile(r"\btime\.(time|monotonic|perf_counter|sleep|process_time)\b|\btimeout=\d")


def test_no_test_reads_the_wall_clock_or_sets_a_fixed_time_limit():
    offenders = [
        f"{path.relative_to(TESTS)}:{number}: {line.strip()}"
        for path in sorted(TESTS.rglob("*.py"))
        if path != Path(__file__).resolve()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if CLOCK.search(line)
    ]
    assert not offenders, "\n".join(offenders)
