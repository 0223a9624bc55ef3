"""The docs' pictures, from real runs, photographed in headless Chromium at 1,300 px and saved as small palette
PNGs: the README's (docs/images/report.png: the LAMA probe built, the packaged SmolLM2-135M evaluated on a seeded
sample of its facts, its report) and, with --suite, the suite page of SmolLM2-135M and Gemma 3 270M on that probe
in two prompt forms (docs/images/suite.png, the whole page). Rerunning resumes the builds and the runs.

    .venv/bin/python scripts/screenshot_report.py [--limit 200] [--runs runs] [--suite]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def kbench(*args: str) -> None:
    """`kbench ARGS` in the checkout, on this Python."""
    subprocess.run([sys.executable, "-m", "kbench", *args], cwd=REPO, check=True)


SUITE = """[suite]
name = "lama-two-models"

[[models]]
model = "smollm2-135m"
name = "smollm2-135m"

[[models]]
model = "gemma3-270m"
name = "gemma3-270m"

[[datasets]]
name = "lama"
path = "lama"

[[tasks]]
task = "extraction"
name = "cloze"
[tasks.settings]
limit = {limit}

[[tasks]]
task = "extraction"
name = "question"
[tasks.settings]
prompt = "question"
limit = {limit}
"""


def screenshot(page: Path, out: Path, width: int, height: int) -> None:
    chromium = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    if chromium is None:
        sys.exit("headless Chromium is needed (apt-get install -y chromium)")
    with tempfile.TemporaryDirectory() as profile:
        shot = Path(profile) / "shot.png"
        subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                f"--screenshot={shot}",
                page.resolve().as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        from PIL import Image

        image = Image.open(shot).convert("RGB").resize((width * 3 // 4, height * 3 // 4), Image.LANCZOS)
        out.parent.mkdir(parents=True, exist_ok=True)
        image.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(out, optimize=True)  # a palette keeps the PNG small


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--runs", type=Path, default=Path("runs"))
    parser.add_argument("--suite", action="store_true", help="also the suite page (docs/images/suite.png)")
    args = parser.parse_args()
    runs = args.runs  # relative to the checkout (kbench runs there), so the report shows runs/..., not a private path
    kbench("build", "lama", "--out", str(runs / "lama"))
    run = runs / f"smollm2-lama-{args.limit}"
    kbench(
        "evaluate",
        "extraction",
        "--dataset",
        str(runs / "lama"),
        "--model",
        "smollm2-135m",
        "--limit",
        str(args.limit),
        "--out",
        str(run),
    )
    kbench("report", str(run), "--out", str(runs / "report-screenshot"))
    shoot(REPO / runs / "report-screenshot" / "index.html", REPO / "docs" / "images" / "report.png", 1000)
    if args.suite:
        suite = REPO / runs / "screenshot-suite.toml"
        suite.write_text(SUITE.replace("{limit}", str(args.limit)), encoding="utf-8")
        kbench("suite", "run", str(runs / "screenshot-suite.toml"), "--out", str(runs / "suite-lama-two-models"))
        kbench("report", str(runs / "suite-lama-two-models"), "--out", str(runs / "suite-report-screenshot"))
        shoot(REPO / runs / "suite-report-screenshot" / "index.html", REPO / "docs" / "images" / "suite.png", 2600)


def shoot(page: Path, out: Path, height: int) -> None:
    screenshot(page, out, 1300, height)
    print(f"wrote {out} ({out.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
