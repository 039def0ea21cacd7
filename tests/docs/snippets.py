"""The fenced examples of README.md and docs/**/*.md, and how the docs test runs them.

A ```python or ```bash block runs as written, with only its sizes shrunk (training steps, samples, CAS runs,
nets). A block that cannot run in the test says so just above its fence, with the reason:

    <!-- not-run: needs HF_TOKEN and the network -->
    <!-- heavy: trains three recipes on real data (about 80 s) -->

``not-run`` blocks never run; ``heavy`` blocks run in the marked suite that CI runs after the default one (the
default case of their page skips them, so a later block of a page must not need a heavy one's results). Output
and configuration listings use another language (```text, ```yaml), and are not run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUN_LANGUAGES = ("python", "bash")
#: fence languages that look runnable but would escape the test: use python or bash, or a listing language
REFUSED_LANGUAGES = ("", "py", "python3", "sh", "shell", "console", "zsh", "pycon")
MARK = re.compile(r"^<!--\s*(not-run|heavy)\s*(?::\s*(.*?))?\s*-->$")
FENCE = re.compile(r"^```([\w+-]*)\s*$")


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository root
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    not_run: str | None = None  # the reason, when marked not-run
    heavy: str | None = None  # the reason, when marked heavy

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a page, with the marks of the comment lines just above its fence."""
    lines, found, index = path.read_text().splitlines(), [], 0
    while index < len(lines):
        fence = FENCE.match(lines[index])
        if not fence:
            index += 1
            continue
        end = next((j for j in range(index + 1, len(lines)) if lines[j].startswith("```")), None)
        if end is None:
            raise ValueError(f"{path}:{index + 1}: an unclosed code fence")
        marks, above = {}, index - 1
        while above >= 0 and MARK.match(lines[above].strip()):
            kind, reason = MARK.match(lines[above].strip()).groups()
            marks[kind] = reason or ""
            above -= 1
        found.append(
            Block(
                page=str(path.relative_to(ROOT)),
                line=index + 1,
                language=fence.group(1),
                code="\n".join(lines[index + 1 : end]) + "\n",
                not_run=marks.get("not-run"),
                heavy=marks.get("heavy"),
            )
        )
        index = end + 1
    return found


def all_blocks() -> list[Block]:
    return [block for page in pages() for block in blocks(page)]


def bash_commands(code: str) -> list[list[str]]:
    """The commands of a bash block: continuation lines joined, comments and blank lines dropped."""
    import shlex

    joined = re.sub(r"\\\n\s*", " ", code)
    return [words for words in (shlex.split(line, comments=True) for line in joined.splitlines()) if words]
