"""Headless Chromium from the command line, for the report's browser test and
benchmarks/bench_report.py: `--dump-dom` prints the DOM after the page's scripts ran, and
`--screenshot` draws it. Debian's `chromium` package; no driver, no download."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
MISSING = (
    "headless Chromium is not installed: `apt-get install chromium` (Debian; .ci/run "
    "installs it) to run the HTML report's browser tests"
)


def _run(url: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None, MISSING
    with tempfile.TemporaryDirectory(prefix="faultbench-chromium-") as profile:
        cmd = [
            CHROMIUM,
            "--headless",
            "--no-sandbox",  # CI containers run as root
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--virtual-time-budget=30000",
            *args,
            url,
        ]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)


def dump_dom(path: Path, fragment: str = "") -> str:
    """The page's DOM after its scripts ran, as HTML."""
    return _run(path.resolve().as_uri() + fragment, "--dump-dom").stdout


def screenshot(path: Path, png: Path, fragment: str = "", size: str = "1200,1350") -> Path:
    png.parent.mkdir(parents=True, exist_ok=True)
    _run(path.resolve().as_uri() + fragment, f"--screenshot={png}", f"--window-size={size}")
    return png


def body_attribute(dom: str, name: str) -> str | None:
    m = re.search(r"<body[^>]*\s" + re.escape(name) + r'="([^"]*)"', dom)
    return m[1] if m else None
