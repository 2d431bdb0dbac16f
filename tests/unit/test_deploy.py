"""The deployment files are consistent with each other, with the code and with the committed
dashboards/rules, and the configuration reference in docs/ matches the settings models.

Real tools where they exist here: promtool (always expected), amtool and kubectl (used when
installed), bash -n for the topic-init script.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml
from pydantic import BaseModel, Field, SecretStr

from claimwatch.docgen import config as ref
from evaluator_worker.config import WorkerSettings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
COMPOSE_DIR = DEPLOY / "compose"
COMPOSE_FILE = COMPOSE_DIR / "docker-compose.yml"
PROM_CONFIG = DEPLOY / "prometheus" / "prometheus.yml"
AM_CONFIG = DEPLOY / "alertmanager" / "alertmanager.yml"
GRAFANA_PROV = DEPLOY / "grafana" / "provisioning"
K8S = DEPLOY / "k8s"
DASHBOARDS = ["claimwatch-overview.json", "claimwatch-pipeline.json"]
RULE_FILES = ["claimwatch-recording.yml", "claimwatch-alerts.yml"]
TOPICS = ["claimwatch.traces", "claimwatch.results", "claimwatch.dead-letter"]
METRICS_PORT = 9464


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _load_all(path: Path) -> list[Any]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]


def _compose() -> dict:
    return _load(COMPOSE_FILE)


def _require_file(path: Path, owner: str) -> Path:
    """Fail (never skip) with a clear message when a file another part of the project owns is missing."""
    if not path.is_file():
        pytest.fail(f"{path.relative_to(ROOT)} is missing: it is written by {owner} and deploy/ depends on it")
    return path


def _bind_mounts(service: dict) -> list[tuple[Path, str]]:
    """(host path resolved from deploy/compose, container path) of a compose service's bind mounts."""
    mounts = []
    for vol in service.get("volumes", []):
        if isinstance(vol, str):
            parts = vol.split(":")
            source, target = parts[0], parts[1]
        else:
            if vol.get("type") != "bind":
                continue
            source, target = vol["source"], vol["target"]
        if source.startswith((".", "/", "~")):
            mounts.append(((COMPOSE_DIR / source).resolve(), target))
    return mounts


def _host_path_for(service: dict, container_path: str) -> Path | None:
    """Map a path inside a compose container back to the host through the service's bind mounts."""
    best: tuple[int, Path] | None = None
    cpath = PurePosixPath(container_path)
    for host, target in _bind_mounts(service):
        t = PurePosixPath(target)
        if cpath == t or t in cpath.parents:
            rel = cpath.relative_to(t)
            if best is None or len(t.parts) > best[0]:
                best = (len(t.parts), host / rel)
    return best[1] if best else None


def _env(service: dict) -> dict[str, str]:
    env = service.get("environment", {})
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: str(v) for k, v in env.items()}


def _k8s_docs() -> list[dict]:
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        for doc in _load_all(path):
            if isinstance(doc, dict) and "kind" in doc and "apiVersion" in doc and doc["kind"] != "Kustomization":
                docs.append(doc | {"__file__": path.name})
    return docs


def _one(kind: str, docs: list[dict] | None = None) -> dict:
    found = [d for d in (docs if docs is not None else _k8s_docs()) if d["kind"] == kind]
    assert len(found) == 1, f"expected exactly one {kind} in deploy/k8s, found {len(found)}"
    return found[0]


def _kustomize_docs() -> list[dict]:
    kust = _load(K8S / "kustomization.yaml")
    docs = []
    for name in kust["resources"]:
        docs += [d | {"__file__": name} for d in _load_all(K8S / name) if isinstance(d, dict)]
    return docs


def _matches(selector: dict, labels: dict) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=ROOT, **kw)


# ---------------------------------------------------------------------------
# every file parses, every path exists
# ---------------------------------------------------------------------------


def _deploy_yaml_files() -> list[Path]:
    out = []
    for dirpath, _dirs, files in os.walk(DEPLOY):  # does not descend into the rules symlink
        out += [Path(dirpath) / f for f in files if f.endswith((".yml", ".yaml"))]
    return sorted(out)


def test_every_yaml_under_deploy_parses():
    """Every YAML file under deploy/ parses (all documents of multi-document files) into mappings."""
    files = _deploy_yaml_files()
    assert len(files) >= 12
    for path in files:
        docs = _load_all(path)
        assert docs, f"{path} is empty"
        for doc in docs:
            assert isinstance(doc, dict), f"{path}: a document is not a mapping"


def test_compose_host_paths_exist():
    """Every bind-mount source and build context/Dockerfile in the compose file exists, resolved from deploy/compose/."""
    services = _compose()["services"]
    checked = 0
    for name, svc in services.items():
        for host, _target in _bind_mounts(svc):
            assert host.exists(), f"service {name}: bind mount source {host} does not exist"
            checked += 1
        build = svc.get("build")
        if build:
            context = (COMPOSE_DIR / (build if isinstance(build, str) else build["context"])).resolve()
            assert context.is_dir(), f"service {name}: build context {context} missing"
            dockerfile = context / (build.get("dockerfile", "Dockerfile") if isinstance(build, dict) else "Dockerfile")
            assert dockerfile.is_file(), f"service {name}: {dockerfile} missing"
            assert dockerfile.resolve() == (DEPLOY / "Dockerfile").resolve()
            checked += 1
    assert checked >= 7


def test_dockerfile_copies_existing_paths_and_runs_the_worker_as_non_root():
    """The Dockerfile copies only existing paths, installs the package, runs `claimwatch worker` as a non-root user on 9464."""
    text = (DEPLOY / "Dockerfile").read_text()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    assert lines[0] == "FROM python:3.11-slim"
    for ln in lines:
        if ln.startswith("COPY "):
            for src in ln.split()[1:-1]:
                assert (ROOT / src).exists(), f"COPY source {src} missing from the build context"
    assert any(ln.startswith("RUN pip install '.[anthropic]'") for ln in lines), (
        "the worker image needs the Claude client"
    )
    assert "ENV CLAIMWATCH_VERIFIER_MODEL=/opt/claimwatch/verifier" in lines  # weights are not in the wheel
    user = next(ln.split()[1] for ln in lines if ln.startswith("USER "))
    assert user.split(":")[0] not in ("root", "0")
    assert 'ENTRYPOINT ["claimwatch"]' in lines
    assert 'CMD ["worker"]' in lines
    assert f"EXPOSE {METRICS_PORT}" in lines
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^claimwatch\s*=\s*"claimwatch\.cli:main"', pyproject, re.M)
    packages = re.findall(r'"(\w+)\*"', re.search(r"^include = \[(.*)\]", pyproject, re.M).group(1))
    assert set(packages) >= {"contract", "collector", "evaluator_worker", "claimwatch"}
    ignore = (DEPLOY / "Dockerfile.dockerignore").read_text().split()
    for needed in ("!pyproject.toml", "!README.md", *(f"!{p}/" for p in packages)):
        assert needed in ignore
    for p in packages:
        assert f"COPY {p} ./{p}" in lines, f"package {p} is not copied into the image"


# ---------------------------------------------------------------------------
# compose services
# ---------------------------------------------------------------------------


def test_compose_kafka_listeners_are_consistent():
    """Kafka runs KRaft with internal, controller and host listeners that agree with each other and the workers."""
    services = _compose()["services"]
    kafka = services["kafka"]
    assert re.fullmatch(r"apache/kafka:3\.8\.\d+", kafka["image"])
    env = _env(kafka)
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    listeners = dict(item.split("://") for item in env["KAFKA_LISTENERS"].split(","))
    advertised = dict(item.split("://") for item in env["KAFKA_ADVERTISED_LISTENERS"].split(","))
    protocols = dict(item.split(":") for item in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
    assert set(listeners) <= set(protocols)
    assert set(advertised) <= set(listeners)
    controller = env["KAFKA_CONTROLLER_LISTENER_NAMES"]
    assert controller in listeners and controller not in advertised
    voter_port = env["KAFKA_CONTROLLER_QUORUM_VOTERS"].rsplit(":", 1)[1]
    assert listeners[controller].endswith(f":{voter_port}")
    assert env["KAFKA_INTER_BROKER_LISTENER_NAME"] in advertised
    # workers reach the internal listener; the host reaches the published one
    internal = advertised[env["KAFKA_INTER_BROKER_LISTENER_NAME"]]
    assert _env(services["evaluator-worker"])["CLAIMWATCH_KAFKA__BOOTSTRAP_SERVERS"] == internal
    published = {str(p).split(":")[0] for p in kafka["ports"]}
    host_listeners = [addr for addr in advertised.values() if addr.startswith("localhost:")]
    assert host_listeners and host_listeners[0].split(":")[1] in published


def test_topic_init_creates_the_three_topics_with_valid_bash():
    """The one-shot topic-init service runs a syntactically valid script creating all three topics, idempotently."""
    services = _compose()["services"]
    init = services["topic-init"]
    assert init["depends_on"]["kafka"]["condition"] == "service_healthy"
    script = "\n".join(init["command"]) if isinstance(init["command"], list) else init["command"]
    script = script.replace("$$", "$")  # compose interpolation
    check = _run(["bash", "-n"], input=script)
    assert check.returncode == 0, check.stderr
    assert "--if-not-exists" in script
    for topic in TOPICS:
        assert re.search(rf"^create {re.escape(topic)}\s", script, re.M), topic
    assert int(_env(init)["PARTITIONS"]) == 6
    for name in ("evaluator-worker", "evaluator-worker-offline"):
        assert services[name]["depends_on"]["topic-init"]["condition"] == "service_completed_successfully"


def test_compose_workers_judge_with_claude_and_the_offline_judge_is_a_profile():
    """Two worker replicas judging with Claude by default (key from an env file, required); an offline judge only
    through an explicit profile, in the same group; the project's topics and a graceful stop."""
    services = _compose()["services"]
    worker = services["evaluator-worker"]
    env = _env(worker)
    assert worker["deploy"]["replicas"] >= 2
    assert env["CLAIMWATCH_TOPIC"] == TOPICS[0]
    assert env["CLAIMWATCH_RESULTS_TOPIC"] == TOPICS[1]
    assert env["CLAIMWATCH_DEAD_LETTER_TOPIC"] == TOPICS[2]
    assert int(env["CLAIMWATCH_METRICS_PORT"]) == METRICS_PORT
    assert "profiles" not in worker
    assert env["CLAIMWATCH_JUDGE"] == "anthropic"
    env_files = [e if isinstance(e, str) else e for e in worker["env_file"]]
    assert env_files == [{"path": "./anthropic.env", "required": True}]
    offline = services["evaluator-worker-offline"]
    assert offline["profiles"] == ["offline"]
    oenv = _env(offline)
    assert oenv["CLAIMWATCH_JUDGE"] == "heuristic"
    assert oenv["CLAIMWATCH_CONSUMER__GROUP_ID"] == env["CLAIMWATCH_CONSUMER__GROUP_ID"]
    example = (COMPOSE_DIR / "anthropic.env.example").read_text()
    assert re.search(r"^ANTHROPIC_API_KEY=", example, re.M)
    assert "anthropic.env" in (COMPOSE_DIR / ".gitignore").read_text().split()
    anth = offline
    for svc in (worker, anth):
        grace = svc["stop_grace_period"]
        assert int(grace.rstrip("s")) >= 30
    for name in ("kafka", "prometheus", "alertmanager", "grafana"):
        image = services[name]["image"]
        assert ":" in image and not image.endswith(":latest"), f"{name} image not pinned: {image}"


def test_compose_trace_backend_receives_the_evaluations_and_grafana_links_to_it():
    """Workers export evaluations over OTLP to the compose Jaeger; Grafana's exemplar link opens that Jaeger's traces."""
    services = _compose()["services"]
    jaeger = services["jaeger"]
    assert ":" in jaeger["image"] and not jaeger["image"].endswith(":latest")
    assert str(jaeger["environment"]["COLLECTOR_OTLP_ENABLED"]).lower() == "true"
    published = {str(p).split(":")[-1] for p in jaeger["ports"]}
    assert {"16686", "4318"} <= published
    for name in ("evaluator-worker", "evaluator-worker-offline"):
        svc = services[name]
        assert _env(svc)["CLAIMWATCH_TRACE_EXPORT_ENDPOINT"] == "http://jaeger:4318/v1/traces"
        assert "jaeger" in svc["depends_on"]
    ds = yaml.safe_load((ROOT / "deploy" / "grafana" / "provisioning" / "datasources" / "prometheus.yml").read_text())
    (dest,) = ds["datasources"][0]["jsonData"]["exemplarTraceIdDestinations"]
    assert dest["name"] == "trace_id"
    assert dest["url"] == "http://localhost:16686/trace/$${__value.raw}"  # the Jaeger UI published above


def test_compose_file_validates_with_docker_compose_when_available():
    """`docker compose config` accepts the file (skipped when no compose binary is installed)."""
    binary = os.environ.get("COMPOSE_BIN") or shutil.which("docker-compose")
    if binary:
        cmd = [binary]
    elif shutil.which("docker") and _run(["docker", "compose", "version"]).returncode == 0:
        cmd = ["docker", "compose"]
    else:
        pytest.skip("no docker compose binary (set COMPOSE_BIN)")
    for profile in ([], ["--profile", "anthropic"]):
        result = subprocess.run(
            [*cmd, *profile, "config", "-q"], cwd=COMPOSE_DIR, capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0, result.stderr


# ---------------------------------------------------------------------------
# Prometheus and Alertmanager
# ---------------------------------------------------------------------------


def test_prometheus_rules_symlink_points_at_committed_rules():
    """deploy/prometheus/rules is a relative symlink to dashboards/rules holding the committed rule files."""
    link = DEPLOY / "prometheus" / "rules"
    assert link.is_symlink()
    assert not os.path.isabs(os.readlink(link))
    assert link.resolve() == (ROOT / "dashboards" / "rules").resolve()
    for name in RULE_FILES:
        _require_file(ROOT / "dashboards" / "rules" / name, "the dashboards helper (dashboards/rules)")


def test_promtool_check_config_passes():
    """`promtool check config deploy/prometheus/prometheus.yml` passes and loads both committed rule files."""
    for name in RULE_FILES:
        _require_file(ROOT / "dashboards" / "rules" / name, "the dashboards helper (dashboards/rules)")
    promtool = shutil.which("promtool") or ("/usr/bin/promtool" if Path("/usr/bin/promtool").exists() else None)
    if promtool is None:
        if os.environ.get("CI"):
            pytest.fail("promtool not installed (apt-get install prometheus)")
        pytest.skip("promtool not installed")
    result = _run([promtool, "check", "config", str(PROM_CONFIG.relative_to(ROOT))])
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout + result.stderr
    committed = sorted((ROOT / "dashboards" / "rules").glob("*.yml"))
    assert f"SUCCESS: {len(committed)} rule files found" in out
    for path in committed:
        assert f"Checking deploy/prometheus/rules/{path.name}" in out


def test_prometheus_paths_work_inside_the_container():
    """In compose, the config's rule_files glob lands on the mounted dashboards/rules and the scrape targets are compose services."""
    services = _compose()["services"]
    prom = services["prometheus"]
    config_flag = next(a for a in prom["command"] if a.startswith("--config.file="))
    container_config = PurePosixPath(config_flag.split("=", 1)[1])
    assert _host_path_for(prom, str(container_config)) == PROM_CONFIG.resolve()
    config = _load(PROM_CONFIG)
    matched = []
    for pattern in config["rule_files"]:
        container_glob = container_config.parent / pattern
        host_dir = _host_path_for(prom, str(container_glob.parent))
        assert host_dir is not None, f"{container_glob.parent} is not mounted into the prometheus container"
        assert host_dir == (ROOT / "dashboards" / "rules").resolve()
        matched += [p.name for p in host_dir.iterdir() if fnmatch.fnmatch(p.name, container_glob.name)]
    committed = sorted(p.name for p in (ROOT / "dashboards" / "rules").glob("*.yml"))
    assert sorted(matched) == committed and set(RULE_FILES) <= set(matched), matched
    jobs = {j["job_name"]: j for j in config["scrape_configs"]}
    sd = jobs["claimwatch-worker"]["dns_sd_configs"][0]
    assert "evaluator-worker" in sd["names"] and sd["port"] == METRICS_PORT
    for name in sd["names"]:
        assert name in services
    am_target = config["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"][0]
    assert am_target.split(":")[0] in services and am_target.endswith(":9093")


def test_alertmanager_routes_pages_to_the_pager():
    """Alertmanager groups by alertname and release and routes severity=page to the pager receiver, the rest to the default."""
    config = _load(AM_CONFIG)
    route = config["route"]
    assert route["group_by"] == ["alertname", "release"]
    receivers = {r["name"] for r in config["receivers"]}
    assert route["receiver"] in receivers
    page_routes = [r for r in route["routes"] if 'severity="page"' in r.get("matchers", [])]
    assert len(page_routes) == 1 and page_routes[0]["receiver"] in receivers
    assert page_routes[0]["receiver"] != route["receiver"]
    mount = _host_path_for(_compose()["services"]["alertmanager"], "/etc/alertmanager/alertmanager.yml")
    assert mount == AM_CONFIG.resolve()


def test_alertmanager_config_passes_amtool():
    """`amtool check-config` accepts the config and `amtool config routes test` sends pages and warnings to the right receivers."""
    amtool = shutil.which("amtool")
    if amtool is None:
        pytest.skip("amtool not installed (apt-get install prometheus-alertmanager)")
    result = _run([amtool, "check-config", str(AM_CONFIG)])
    assert result.returncode == 0, result.stdout + result.stderr
    routes = {}
    for severity in ("page", "warning"):
        r = _run(
            [
                amtool,
                "config",
                "routes",
                "test",
                f"--config.file={AM_CONFIG}",
                f"severity={severity}",
                "alertname=ClaimwatchContradictedClaimsSpike",
                "release=r1",
            ]
        )
        assert r.returncode == 0, r.stderr
        routes[severity] = r.stdout.strip()
    assert routes == {"page": "claimwatch-pager", "warning": "claimwatch-default"}


def test_alert_rules_carry_the_labels_alertmanager_routes_on():
    """Every committed alert has a severity label, and some page, so the pager route of alertmanager.yml is reachable."""
    rules_path = _require_file(ROOT / "dashboards" / "rules" / "claimwatch-alerts.yml", "the dashboards helper")
    alerts = [rule for group in _load(rules_path)["groups"] for rule in group["rules"] if "alert" in rule]
    assert alerts
    for rule in alerts:
        assert rule.get("labels", {}).get("severity"), f"{rule['alert']} has no severity label"
    assert "page" in {rule["labels"]["severity"] for rule in alerts}


# ---------------------------------------------------------------------------
# Grafana
# ---------------------------------------------------------------------------


def test_grafana_provider_loads_the_committed_dashboards():
    """The dashboards provider's path maps, through compose's volumes, onto the directory holding dashboards/grafana/*.json."""
    for name in DASHBOARDS:
        _require_file(ROOT / "dashboards" / "grafana" / name, "the dashboards helper (dashboards/grafana)")
    grafana = _compose()["services"]["grafana"]
    assert re.fullmatch(r"grafana/grafana:\d+\.\d+\.\d+", grafana["image"])
    assert _host_path_for(grafana, "/etc/grafana/provisioning") == GRAFANA_PROV.resolve()
    providers = _load(GRAFANA_PROV / "dashboards" / "claimwatch.yml")["providers"]
    assert len(providers) == 1 and providers[0]["type"] == "file"
    host_dir = _host_path_for(grafana, providers[0]["options"]["path"])
    assert host_dir is not None, "the provider path is not mounted into the grafana container"
    committed = sorted(p.name for p in (ROOT / "dashboards" / "grafana").glob("*.json"))
    assert sorted(p.name for p in host_dir.glob("*.json")) == committed
    assert set(DASHBOARDS) <= set(committed)
    home = _env(grafana)["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert _host_path_for(grafana, home) == (ROOT / "dashboards" / "grafana" / DASHBOARDS[0]).resolve()


def _datasource_refs(node: Any) -> list[Any]:
    out = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "datasource":
                out.append(value)
            else:
                out += _datasource_refs(value)
    elif isinstance(node, list):
        for item in node:
            out += _datasource_refs(item)
    return out


def test_grafana_datasource_matches_what_the_dashboards_expect():
    """The provisioned datasource is the default Prometheus one, and every dashboard query uses the prometheus `datasource` variable or its uid."""
    datasources = _load(GRAFANA_PROV / "datasources" / "prometheus.yml")["datasources"]
    assert len(datasources) == 1
    ds = datasources[0]
    assert ds["type"] == "prometheus" and ds["isDefault"] is True and ds["uid"]
    services = _compose()["services"]
    host, port = ds["url"].removeprefix("http://").split(":")
    assert host in services and port == "9090"
    for name in DASHBOARDS:
        dash = json.loads(_require_file(ROOT / "dashboards" / "grafana" / name, "the dashboards helper").read_text())
        variables = {v["name"]: v for v in dash["templating"]["list"]}
        assert "datasource" in variables, f"{name} has no datasource variable"
        assert variables["datasource"]["type"] == "datasource"
        assert variables["datasource"]["query"] == ds["type"]
        for ref_ in _datasource_refs({k: v for k, v in dash.items() if k != "templating"}) + [
            v.get("datasource") for v in dash["templating"]["list"] if v["type"] != "datasource"
        ]:
            if ref_ is None:
                continue
            uid = ref_.get("uid") if isinstance(ref_, dict) else ref_
            if isinstance(ref_, dict) and ref_.get("type") in ("grafana", "datasource"):
                continue  # Grafana's built-in annotation / mixed datasources
            assert uid in ("${datasource}", "$datasource", ds["uid"]), f"{name}: unexpected datasource {ref_!r}"
            if isinstance(ref_, dict) and "type" in ref_:
                assert ref_["type"] == ds["type"]


# ---------------------------------------------------------------------------
# Kubernetes
# ---------------------------------------------------------------------------


def test_k8s_manifests_have_the_required_kinds_and_no_namespace():
    """deploy/k8s holds a Deployment, Service, ServiceMonitor, PDB and a lag autoscaler, none pinned to a namespace."""
    docs = _k8s_docs()
    kinds = {d["kind"] for d in docs}
    assert {"ConfigMap", "Secret", "Deployment", "Service", "ServiceMonitor", "PodDisruptionBudget"} <= kinds
    assert "ScaledObject" in kinds or "HorizontalPodAutoscaler" in kinds
    for d in docs:
        assert "namespace" not in d["metadata"], f"{d['__file__']}: manifests must be namespace-agnostic"


def test_kustomization_lists_only_existing_files_and_no_secret():
    """kustomization.yaml lists existing files that provide every required kind, and never the example Secret."""
    kust = _load(K8S / "kustomization.yaml")
    for name in kust["resources"]:
        assert (K8S / name).is_file(), f"kustomization lists missing file {name}"
    assert "namespace" not in kust
    kinds = {d["kind"] for d in _kustomize_docs()}
    assert {"ConfigMap", "Deployment", "Service", "ServiceMonitor", "PodDisruptionBudget", "ScaledObject"} <= kinds
    assert "Secret" not in kinds
    assert "HorizontalPodAutoscaler" not in kinds, "the HPA alternative must not fight the KEDA ScaledObject"


def test_kustomize_build_succeeds_when_kubectl_is_available():
    """`kubectl kustomize deploy/k8s` renders the manifests with the part-of label (skipped without kubectl)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl not installed")
    result = _run([kubectl, "kustomize", str(K8S)])
    assert result.returncode == 0, result.stderr
    rendered = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert {d["kind"] for d in rendered} >= {"Deployment", "Service", "ServiceMonitor", "PodDisruptionBudget"}
    for d in rendered:
        assert d["metadata"]["labels"]["app.kubernetes.io/part-of"] == "claimwatch"


def test_k8s_ports_selectors_and_annotations_agree():
    """Container port, Service port, ServiceMonitor endpoint, scrape annotations and CLAIMWATCH_METRICS_PORT are one port; selectors match the pods."""
    docs = _k8s_docs()
    dep, svc, sm, pdb = (_one(k, docs) for k in ("Deployment", "Service", "ServiceMonitor", "PodDisruptionBudget"))
    cm = _one("ConfigMap", docs)
    pod = dep["spec"]["template"]
    pod_labels = pod["metadata"]["labels"]
    assert _matches(dep["spec"]["selector"]["matchLabels"], pod_labels)
    container = pod["spec"]["containers"][0]
    port = next(p for p in container["ports"] if p["name"] == "metrics")
    assert port["containerPort"] == METRICS_PORT
    assert int(cm["data"]["CLAIMWATCH_METRICS_PORT"]) == port["containerPort"]
    # one scrape path: the ServiceMonitor. Annotations as well would scrape each pod twice on some setups
    ann = pod["metadata"].get("annotations") or {}
    assert not any(k.startswith("prometheus.io/") for k in ann), "ServiceMonitor and scrape annotations: pick one"
    svc_port = next(p for p in svc["spec"]["ports"] if p["name"] == "metrics")
    assert svc_port["targetPort"] in (port["name"], port["containerPort"])
    assert svc_port["port"] == port["containerPort"]
    assert _matches(svc["spec"]["selector"], pod_labels)
    assert _matches(sm["spec"]["selector"]["matchLabels"], svc["metadata"]["labels"])
    assert sm["spec"]["endpoints"][0]["port"] == svc_port["name"]
    assert _matches(pdb["spec"]["selector"]["matchLabels"], pod_labels)
    assert pdb["spec"]["minAvailable"] == 1


def test_k8s_deployment_is_hardened_and_shuts_down_gracefully():
    """No replicas (KEDA owns them), non-root (the Dockerfile's uid), probes on /metrics, resources set, grace covers the drain, secrets from a Secret."""
    docs = _k8s_docs()
    dep = _one("Deployment", docs)
    spec = dep["spec"]["template"]["spec"]
    # a replicas field on a KEDA/HPA-scaled Deployment is re-applied by every `kubectl apply`
    assert (
        "replicas" not in dep["spec"]
        and _one("ScaledObject", docs)["spec"]["scaleTargetRef"]["name"] == dep["metadata"]["name"]
    )
    assert spec["terminationGracePeriodSeconds"] >= _shutdown_budget_s(_one("ConfigMap", docs)["data"])
    sc = spec["securityContext"]
    dockerfile_uid = re.search(r"^USER (\d+)", (DEPLOY / "Dockerfile").read_text(), re.M).group(1)
    assert sc["runAsNonRoot"] is True and str(sc["runAsUser"]) == dockerfile_uid
    container = spec["containers"][0]
    assert container["args"] == ["worker"]
    for probe in ("livenessProbe", "readinessProbe"):
        get = container[probe]["httpGet"]
        assert get["path"] == "/metrics" and get["port"] in ("metrics", METRICS_PORT)
    assert {"cpu", "memory"} <= set(container["resources"]["requests"])
    assert "memory" in container["resources"]["limits"]
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["envFrom"][0]["configMapRef"]["name"] == _one("ConfigMap", docs)["metadata"]["name"]
    secret = _one("Secret", docs)
    secret_refs = {
        e["name"]: e["valueFrom"]["secretKeyRef"] for e in container["env"] if "secretKeyRef" in e.get("valueFrom", {})
    }
    assert set(secret_refs) == {
        "ANTHROPIC_API_KEY",
        "CLAIMWATCH_KAFKA__SASL_PLAIN_PASSWORD",
        "CLAIMWATCH_KAFKA__SASL_PLAIN_USERNAME",
    }
    for refd in secret_refs.values():
        assert refd["name"] == secret["metadata"]["name"] and refd["key"] in secret["stringData"]
    for key in _one("ConfigMap", docs)["data"]:
        assert "PASSWORD" not in key and "API_KEY" not in key, f"secret {key} in the ConfigMap"


def test_k8s_configmap_keys_are_real_settings():
    """Every CLAIMWATCH_* key in the ConfigMap is a setting the worker reads (no typos silently ignored)."""
    from evaluator_worker.trace_export import TraceExportSettings

    known = {d.env for d in ref.iter_settings(WorkerSettings)} | {
        d.env for d in ref.iter_settings(TraceExportSettings, ref.env_prefix(TraceExportSettings))
    }
    cm = _one("ConfigMap")
    for key in cm["data"]:
        assert key in known, f"{key} is not a WorkerSettings variable"
    compose_env = _env(_compose()["services"]["evaluator-worker"])
    for key in compose_env:
        assert key in known, f"compose sets unknown variable {key}"


def test_k8s_autoscalers_follow_the_consumer_group_lag():
    """KEDA scales the Deployment on the group's lag of claimwatch.traces; the HPA alternative uses the worker's lag gauge."""
    docs = _k8s_docs()
    dep, cm = _one("Deployment", docs), _one("ConfigMap", docs)
    so = _one("ScaledObject", docs)
    assert so["spec"]["scaleTargetRef"]["name"] == dep["metadata"]["name"]
    trigger = so["spec"]["triggers"][0]
    assert trigger["type"] == "kafka"
    meta = trigger["metadata"]
    assert meta["consumerGroup"] == cm["data"]["CLAIMWATCH_CONSUMER__GROUP_ID"]
    assert meta["topic"] == cm["data"]["CLAIMWATCH_TOPIC"] == TOPICS[0]
    assert meta["bootstrapServers"] == cm["data"]["CLAIMWATCH_KAFKA__BOOTSTRAP_SERVERS"]
    partitions = int(_env(_compose()["services"]["topic-init"])["PARTITIONS"])
    assert 1 <= so["spec"]["minReplicaCount"] <= so["spec"]["maxReplicaCount"] <= partitions
    # cooldownPeriod only governs scaling to zero: with a minimum above 0 it does nothing
    assert so["spec"]["minReplicaCount"] == 0 or "cooldownPeriod" not in so["spec"]
    auth = _one("TriggerAuthentication", docs)
    assert trigger["authenticationRef"]["name"] == auth["metadata"]["name"]
    secret = _one("Secret", docs)
    volumes = {v["name"]: v for v in dep["spec"]["template"]["spec"].get("volumes", [])}
    ca_secret = volumes["kafka-ca"]["secret"]["secretName"]
    params = {t["parameter"] for t in auth["spec"]["secretTargetRef"]}
    assert "ca" in params, "a private CA the workers trust must reach the scaler too"
    for target in auth["spec"]["secretTargetRef"]:
        if target["parameter"] == "ca":  # the same optional Secret the workers mount
            assert target["name"] == ca_secret and target["key"] == "ca.crt"
        else:
            assert target["key"] in secret["stringData"]
    hpa = _one("HorizontalPodAutoscaler", docs)
    assert hpa["spec"]["scaleTargetRef"]["name"] == dep["metadata"]["name"]
    metric = hpa["spec"]["metrics"][0]["external"]["metric"]
    assert metric["name"] == "claimwatch_consumer_lag_records"
    assert hpa["spec"]["maxReplicas"] <= partitions
    from evaluator_worker.metrics import WorkerMetrics

    exported = {m.name for m in WorkerMetrics().registry.collect()}
    assert metric["name"] in exported
    adapter = _load(K8S / "prometheus-adapter-rules.yaml")
    assert adapter["rules"]["external"][0]["name"]["as"] == metric["name"]


# ---------------------------------------------------------------------------
# configuration reference
# ---------------------------------------------------------------------------


def test_configuration_doc_is_up_to_date():
    """docs/configuration.md's generated block equals `python -m claimwatch.docgen.config` output."""
    doc = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert ref.extract_generated(doc) == ref.render_markdown(), (
        "docs/configuration.md is stale: run python -m claimwatch.docgen.config --write docs/configuration.md"
    )
    assert "CLAIMWATCH_KAFKA__SECURITY_PROTOCOL=SASL_SSL" in doc
    assert "CLAIMWATCH_KAFKA__SASL_MECHANISM=SCRAM-SHA-512" in doc


def test_reference_lists_every_setting_with_a_description():
    """Every leaf setting of WorkerSettings and CollectorSettings appears in the reference with a description."""
    text = ref.render_markdown()
    missing = []
    for _title, model in ref.DOCUMENTED:
        for doc in ref.iter_settings(model, prefix=ref.env_prefix(model)):
            assert f"`{doc.env}`" in text
            if not doc.description:
                missing.append(f"{model.__name__}: {doc.env}")
    assert not missing, f"add a #: comment, Field(description=) or a FALLBACK_DESCRIPTIONS entry for {missing}"


_SAMPLES: dict[str, tuple[str, Any]] = {
    "str": ("zz-sample", "zz-sample"),
    "int": ("7", 7),
    "float": ("0.25", 0.25),
    "bool": ("false", False),
}


def test_documented_env_names_are_the_ones_pydantic_reads(monkeypatch):
    """Setting each documented scalar variable changes exactly the field it documents (nested `__` names included)."""
    for _title, model in ref.DOCUMENTED:
        docs = [d for d in ref.iter_settings(model, prefix=ref.env_prefix(model)) if d.type.split(" | ")[0] in _SAMPLES]
        assert len(docs) > 3
        with monkeypatch.context() as env:
            for doc in docs:
                env.setenv(doc.env, _SAMPLES[doc.type.split(" | ")[0]][0])
            settings = model()
        for doc in docs:
            value: Any = settings
            for part in doc.path:
                value = getattr(value, part)
            assert value == _SAMPLES[doc.type.split(" | ")[0]][1], (doc.env, value)


def test_secrets_are_flagged_and_never_printed(monkeypatch):
    """SecretStr settings are marked secret in the reference and their values never appear, even when set."""
    monkeypatch.setenv("CLAIMWATCH_ANTHROPIC__API_KEY", "sk-ant-very-secret-value")
    monkeypatch.setenv("CLAIMWATCH_KAFKA__SASL_PLAIN_PASSWORD", "hunter2-kafka")
    secrets = {d.env for d in ref.iter_settings(WorkerSettings) if d.secret}
    assert secrets == {
        "CLAIMWATCH_ANTHROPIC__API_KEY",
        "CLAIMWATCH_KAFKA__SASL_PLAIN_PASSWORD",
        "CLAIMWATCH_ANTHROPIC__AWS_ACCESS_KEY",
        "CLAIMWATCH_ANTHROPIC__AWS_SECRET_KEY",
        "CLAIMWATCH_ANTHROPIC__AWS_SESSION_TOKEN",
        "CLAIMWATCH_ANTHROPIC__ACCESS_TOKEN",
        "CLAIMWATCH_OPENAI__API_KEY",
        "CLAIMWATCH_BESPOKE__API_KEY",
    }
    text = ref.render_markdown()
    assert "sk-ant-very-secret-value" not in text and "hunter2-kafka" not in text
    for line in text.splitlines():
        if any(f"`{s}`" in line for s in secrets):
            assert "**Secret.**" in line


class _Documented(BaseModel):
    """A model exercising every description source."""

    from_field: int = Field(3, description="from  Field\n description", ge=1)
    #: from a hash-colon comment
    #: on two lines
    from_comment: str = "a"
    from_trailing: bool = True  # from a trailing comment
    from_docstring: float = 1.5
    """From an attribute docstring."""
    secret: SecretStr | None = SecretStr("do-not-print")
    items: list[str] = Field(default_factory=lambda: ["x", "y"])


class _Outer(BaseModel):
    inner: _Documented = Field(default_factory=_Documented)
    flag: bool = False


def test_descriptions_types_and_defaults_come_from_the_model():
    """Descriptions come from Field, #: comments, trailing comments and docstrings; nested names use __; secrets hidden."""
    rows = {d.env: d for d in ref.iter_settings(_Outer, prefix="X_")}
    assert list(rows) == [
        "X_INNER__FROM_FIELD",
        "X_INNER__FROM_COMMENT",
        "X_INNER__FROM_TRAILING",
        "X_INNER__FROM_DOCSTRING",
        "X_INNER__SECRET",
        "X_INNER__ITEMS",
        "X_FLAG",
    ]
    assert rows["X_INNER__FROM_FIELD"].description == "From Field description (>= 1)"
    assert rows["X_INNER__FROM_COMMENT"].description == "From a hash-colon comment on two lines"
    assert rows["X_INNER__FROM_TRAILING"].description == "From a trailing comment"
    assert rows["X_INNER__FROM_DOCSTRING"].description == "From an attribute docstring."
    assert rows["X_INNER__SECRET"].secret and "do-not-print" not in rows["X_INNER__SECRET"].default
    assert rows["X_INNER__SECRET"].type == "SecretStr | None"
    assert rows["X_INNER__ITEMS"].default == '`["x","y"]`' and rows["X_INNER__ITEMS"].type == "list[str]"
    assert rows["X_INNER__FROM_TRAILING"].default == "`true`"
    assert rows["X_INNER__FROM_FIELD"].path == ("inner", "from_field")
    table = ref.render_markdown([("Outer", _Outer)])
    assert "#### `inner`" in table and "SecretStr \\| None" in table


def test_write_and_check_keep_the_intro_and_detect_drift(tmp_path, capsys):
    """--check fails on a stale block, --write refreshes only the block, then --check passes and stdout prints the reference."""
    doc = tmp_path / "configuration.md"
    doc.write_text(f"# Intro kept\n\n{ref.BEGIN_MARKER}\nstale\n{ref.END_MARKER}\n\nOutro kept.\n")
    assert ref.main(["--check", str(doc)]) == 1
    assert ref.main(["--write", str(doc)]) == 0
    text = doc.read_text()
    assert text.startswith("# Intro kept\n") and text.endswith("Outro kept.\n") and "stale" not in text
    assert ref.main(["--check", str(doc)]) == 0
    capsys.readouterr()
    assert ref.main([]) == 0
    assert capsys.readouterr().out == ref.render_markdown()


def _shutdown_budget_s(env: dict[str, str]) -> float:
    """What a worker may need after SIGTERM: the drain deadline plus commit (5 s) and client close (10 s)."""
    flow = WorkerSettings().flow
    drain = float(env.get("CLAIMWATCH_FLOW__DRAIN_TIMEOUT_S", flow.drain_timeout_s))
    return drain + 5 + 10


def _grace_s(value: str) -> float:
    m = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", value)
    assert m and value, value
    return int(m.group(1) or 0) * 60 + int(m.group(2) or 0)


def test_compose_workers_shut_down_within_their_grace_period_and_report_health():
    """Every compose worker's stop_grace_period covers the drain deadline; each has a healthcheck on /metrics."""
    services = _compose()["services"]
    workers = {n: svc for n, svc in services.items() if n.startswith("evaluator-worker")}
    assert len(workers) >= 2
    for name, svc in workers.items():
        assert _grace_s(svc["stop_grace_period"]) >= _shutdown_budget_s(_env(svc)), name
        check = " ".join(svc["healthcheck"]["test"])
        assert "9464/metrics" in check, name


def test_every_topic_a_config_names_is_created_by_topic_init():
    """Auto-creation is off in compose: every topic the services and the OTel Collector use is created up front."""
    services = _compose()["services"]
    assert _env(services["kafka"])["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"
    script = "\n".join(services["topic-init"]["command"])
    created = set(re.findall(r"^\s*create\s+(\S+)", script, re.M))
    named = {"claimwatch.traces", "claimwatch.results", "claimwatch.dead-letter"}
    for svc in services.values():
        env = _env(svc)
        for key in (
            "CLAIMWATCH_TOPIC",
            "CLAIMWATCH_RESULTS_TOPIC",
            "CLAIMWATCH_DEAD_LETTER_TOPIC",
            "CLAIMWATCH_BRIDGE_SOURCE_TOPIC",
        ):
            if env.get(key):
                named.add(env[key])
    otel = _load(DEPLOY / "otel-collector" / "config.yaml")
    for exporter in otel["exporters"].values():
        for signal in ("traces", "logs", "metrics"):
            topic = (exporter.get(signal) or {}).get("topic") if isinstance(exporter, dict) else None
            if topic:
                named.add(topic)
    assert named - created == set(), f"topics used but never created: {sorted(named - created)}"


def test_alertmanager_inhibit_rules_can_fire():
    """Each inhibit rule names alerts that exist at the severities it matches, and its `equal` labels are on both."""
    rules = [
        r
        for g in _load(ROOT / "dashboards" / "rules" / "claimwatch-alerts.yml")["groups"]
        for r in g["rules"]
        if "alert" in r
    ]
    am = _load(DEPLOY / "alertmanager" / "alertmanager.yml")

    def matching(matchers: list[str]) -> list[dict]:
        out = []
        for r in rules:
            labels = {"alertname": r["alert"], **r.get("labels", {})}
            ok = True
            for m in matchers:
                name, op, value = re.fullmatch(r'(\w+)\s*(=~|!=|=)\s*"(.*)"', m).groups()
                have = labels.get(name, "")
                ok &= bool(re.fullmatch(value, have)) if op == "=~" else (have == value) == (op == "=")
            if ok:
                out.append(r)
        return out

    assert am["inhibit_rules"]
    for rule in am["inhibit_rules"]:
        sources, targets = matching(rule["source_matchers"]), matching(rule["target_matchers"])
        assert sources and targets, rule
        assert not {r["alert"] for r in sources} & {r["alert"] for r in targets}, "an alert cannot inhibit itself"
        for label in rule.get("equal", []):
            for r in sources + targets:
                # kept by an aggregation `by (...)`, or by a recording rule whose level (level:metric:ops) names it
                levels = {part for lvl in re.findall(r"\b([a-z_]+):claimwatch_", r["expr"]) for part in lvl.split("_")}
                assert label in levels or re.search(rf"by \([^)]*\b{label}\b", r["expr"]), (r["alert"], label)


def test_argo_and_the_adapter_query_the_same_prometheus():
    """The rollout analysis and the HPA adapter read one Prometheus (two addresses drift apart)."""
    argo = _load(DEPLOY / "argo" / "analysis-template.yaml")
    arg = next(a for a in argo["spec"]["args"] if a["name"] == "prometheus-address")
    adapter = _load(K8S / "prometheus-adapter-rules.yaml")
    assert arg["value"] == adapter["prometheus"]["url"] + ":" + str(adapter["prometheus"].get("port", 9090))


def test_collector_forwarding_config_sends_otlp_grpc_to_the_receiver_with_bearer_auth():
    """forward-to-receiver.yaml exports the traces pipeline to the receiver's gRPC Service port, with bearer-token auth."""
    config = _load(DEPLOY / "otel-collector" / "forward-to-receiver.yaml")
    service = _load(K8S / "receiver" / "service.yaml")
    grpc_port = next(p["port"] for p in service["spec"]["ports"] if p["name"] == "otlp-grpc")
    exporter = config["exporters"]["otlp/claimwatch"]
    assert exporter["endpoint"] == f"{service['metadata']['name']}:{grpc_port}"
    assert grpc_port == 4317 and exporter["tls"].get("insecure") is not True
    authenticator = exporter["auth"]["authenticator"]
    assert authenticator.startswith("bearertokenauth") and authenticator in config["extensions"]
    assert config["extensions"][authenticator]["token"] == "${env:CLAIMWATCH_RECEIVER_TOKEN}"
    assert authenticator in config["service"]["extensions"]
    assert "otlp/claimwatch" in config["service"]["pipelines"]["traces"]["exporters"]
    assert exporter["retry_on_failure"]["enabled"] is True  # the receiver's RetryInfo answers are re-sent


def test_deployed_slice_labels_are_the_declared_ones():
    """The k8s ConfigMap's CLAIMWATCH_SLICE_LABELS is the declaration the rules and dashboards are generated from."""
    import json

    from contract.slices import DEFAULT_SLICE_LABELS

    cm = _one("ConfigMap")
    assert tuple(json.loads(cm["data"]["CLAIMWATCH_SLICE_LABELS"])) == DEFAULT_SLICE_LABELS
    for service in _compose()["services"].values():
        value = _env(service).get("CLAIMWATCH_SLICE_LABELS")
        assert value is None or tuple(json.loads(value)) == DEFAULT_SLICE_LABELS
