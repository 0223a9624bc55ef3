"""The README's picture, from a real run: build the LAMA probe, evaluate the packaged SmolLM2-135M on a seeded
sample of its facts, write the report and photograph it in headless Chromium at 1,300 px, saved as a small
palette PNG (docs/images/report.png). Rerunning resumes the build and the run.

    .venv/bin/python scripts/screenshot_report.py [--limit 200] [--runs runs] [--out docs/images/report.png]
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
        image.quantize(colors=64).save(out, optimize=True)  # a palette keeps the PNG small


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--runs", type=Path, default=Path("runs"))
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "images" / "report.png")
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
    screenshot(REPO / runs / "report-screenshot" / "index.html", args.out, 1300, 1000)
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
