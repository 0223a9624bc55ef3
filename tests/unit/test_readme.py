"""The README is a front page a newcomer reads in five minutes: short lines, no lab notes, links that resolve."""

from __future__ import annotations

import re

from tests.conftest import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_short_with_short_lines():
    lines = README.splitlines()
    assert len(lines) <= 250
    assert not [(n, len(line)) for n, line in enumerate(lines, 1) if len(line) > 200]


def test_the_readme_holds_no_dated_measurement():
    # A date (2026-12-03) or a machine's load belongs on the benchmarks page, which the bench scripts write.
    assert not re.findall(r"\b20\d\d-\d\d-\d\d\b", README)
    assert not re.findall(r"load average|idle machine|measured (?:here|on)", README, re.IGNORECASE)


def test_the_quickstart_has_at_most_ten_commands():
    block = README.split("<!-- quickstart:start -->")[1].split("<!-- quickstart:end -->")[0]
    commands = [line for line in block.splitlines() if line.startswith("kbench ")]
    assert 1 <= len(commands) <= 10


def test_every_relative_link_and_image_of_the_readme_exists():
    targets = re.findall(r"\]\((?!https?://)([^)#\s]+)", README)
    assert targets and not [t for t in targets if not (REPO_ROOT / t).exists()]
    assert (REPO_ROOT / "docs" / "images" / "report.png").stat().st_size < 400_000  # the picture stays small
