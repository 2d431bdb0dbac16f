"""Headless Chromium (Debian's ``chromium``) for the tests that render the project's HTML pages."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def chromium(profile: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium with a private profile under ``profile`` and ``args`` (``--dump-dom``, a URL...);
    fails the test when it is not installed or exits non-zero."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.fail("chromium is not installed: apt-get install chromium (scripts/setup.sh does it)")
    run = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            f"--user-data-dir={profile / 'profile'}",
            "--enable-logging=stderr",
            "--v=0",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return run
