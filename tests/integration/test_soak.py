"""``claimwatch soak`` for ~15 s on loopback: records in == records out, exit code 0, JSON + text report."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from claimwatch.soak import MAX_RATE, MAX_SECONDS, add_cli

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def test_soak_15s_balances_and_exits_0(tmp_path):
    """15 s at 20 req/s through demo app -> collector -> broker -> 2 workers: every trace accounted for, once."""
    out = tmp_path / "soak.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "claimwatch.soak",
            "--seconds",
            "15",
            "--rate",
            "20",
            "--workers",
            "2",
            "--json",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=150,
    )
    print(proc.stderr[-1500:])
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["balanced"] is True and "in == out          YES" in proc.stderr
    assert report["sent"] >= 250
    assert (
        report["sent"]
        == report["accounted"]
        == report["results"]
        + report["dead_letters"]
        + report["not_rag"]
        + report["sampled_out"]
        + sum(report["collector_drops"].values())
    )
    assert report["produced"] == report["results"] + report["dead_letters"]
    assert report["missing"] == 0 and report["duplicates"] == 0 and report["span_drops"] == {}
    assert report["max_request_ms"] < 50


def test_add_cli_registers_a_bounded_soak_subcommand():
    """add_cli adds `soak` with --seconds/--rate/--workers/--json to an existing subparsers object."""
    parser = argparse.ArgumentParser(prog="claimwatch")
    add_cli(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["soak", "--seconds", "5", "--rate", "2.5"])
    assert (args.command, args.seconds, args.rate, args.workers, args.json) == ("soak", 5.0, 2.5, 1, None)
    assert callable(args.func) and MAX_SECONDS <= 3_600 and MAX_RATE <= 500
