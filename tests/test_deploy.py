"""deploy/: the Dockerfile and the Kubernetes manifest, checked offline (no container daemon here)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
MANIFEST = ROOT / "deploy" / "k8s.yaml"
BUDGET_MB = 1536  # a class on one server: RSS <= 1.5 GB (docs/PERFORMANCE.md)


def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out, buf = [], ""
    for line in path.read_text().splitlines():
        if not buf and (not line.strip() or line.lstrip().startswith("#")):
            continue
        buf += line.rstrip("\\").strip() + " "
        if not line.rstrip().endswith("\\"):
            word, _, rest = buf.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
            buf = ""
    return out


def make_targets() -> set[str]:
    return set(re.findall(r"^([a-z][\w-]*):", (ROOT / "Makefile").read_text(), flags=re.M))


@pytest.fixture(scope="module")
def docker():
    return instructions(DOCKERFILE)


@pytest.fixture(scope="module")
def docs():
    return {d["kind"]: d for d in yaml.safe_load_all(MANIFEST.read_text())}


def test_dockerfile_installs_with_the_readmes_make_targets(docker):
    final = docker[max(i for i, (op, _) in enumerate(docker) if op == "FROM") :]
    runs = [args for op, args in final if op == "RUN"]
    made = [r for r in runs if r.startswith("make ")]
    assert made, "the image's install steps are the README's make targets"
    targets = make_targets()
    for r in made:
        assert shlex.split(r)[1] in targets, r
    assert any(shlex.split(r)[1] == "check" for r in made)  # builds .venv from requirements.txt
    everything = " ".join(args for _, args in docker)
    assert "pip install" not in everything  # no second install path beside the Makefile's


def test_dockerfile_has_a_cuda_variant_by_build_argument(docker):
    froms = [args for op, args in docker if op == "FROM"]
    assert docker[0] == ("ARG", "VARIANT=cpu")
    stages = {f.split(" AS ")[-1] for f in froms if " AS " in f}
    assert {"base-cpu", "base-cuda"} <= stages
    assert froms[-1] == "base-${VARIANT}"
    assert any("nvidia/cuda" in f and f.endswith("base-cuda") for f in froms)


def test_container_runs_offline_what_make_run_runs(docker):
    env = " ".join(args for op, args in docker if op == "ENV")
    for var in ("HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1", "PIP_NO_INDEX=1"):
        assert var in env
    cmd = [args for op, args in docker if op == "CMD"][-1]
    argv = yaml.safe_load(cmd)  # exec form is a JSON list
    run_recipe = re.search(r"^run:.*\n\t(.+)$", (ROOT / "Makefile").read_text(), flags=re.M).group(1)
    assert "-m ui.serve" in run_recipe and argv[1:3] == ["-m", "ui.serve"]
    port = argv[argv.index("--server.port") + 1]
    assert ("EXPOSE", port) in docker
    assert argv[argv.index("--server.address") + 1] == "0.0.0.0"
    health = [args for op, args in docker if op == "HEALTHCHECK"][0]
    assert f"127.0.0.1:{port}/_stcore/health" in health
    assert (ROOT / "deploy" / "Dockerfile.dockerignore").read_text().splitlines()[0] == ".venv"


def test_manifest_has_deployment_service_ingress_that_fit_together(docs):
    assert {"Deployment", "Service", "Ingress"} <= set(docs)
    dep, svc, ing = docs["Deployment"], docs["Service"], docs["Ingress"]
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert dep["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert svc["spec"]["selector"].items() <= labels.items()
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert svc["spec"]["ports"][0]["targetPort"] in ports
    backend = ing["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend["name"] == svc["metadata"]["name"]
    assert backend["port"]["name"] in {p["name"] for p in svc["spec"]["ports"]}
    env = {e["name"]: e["value"] for e in c["env"]}
    assert env["HF_HUB_OFFLINE"] == "1"


def test_readiness_on_streamlit_health_and_requests_from_measurements(docs):
    (c,) = docs["Deployment"]["spec"]["template"]["spec"]["containers"]
    for probe in ("readinessProbe", "livenessProbe"):
        assert c[probe]["httpGet"]["path"] == "/_stcore/health"
        assert c[probe]["httpGet"]["port"] in {p["name"] for p in c["ports"]} | {p["containerPort"] for p in c["ports"]}
    req, lim = c["resources"]["requests"], c["resources"]["limits"]
    mib = lambda s: int(s[:-2]) * (1024 if s.endswith("Gi") else 1)  # noqa: E731
    # one pod holds one class: the measured RSS budget fits the request, the limit leaves headroom
    assert mib(req["memory"]) >= BUDGET_MB and mib(lim["memory"]) > mib(req["memory"])
    assert float(req["cpu"]) >= 2


def test_ingress_has_cookie_affinity_and_websocket_timeouts(docs):
    ann = docs["Ingress"]["metadata"]["annotations"]
    p = "nginx.ingress.kubernetes.io/"
    assert ann[p + "affinity"] == "cookie"
    assert ann[p + "session-cookie-name"]
    assert int(ann[p + "proxy-read-timeout"]) >= 3600 and int(ann[p + "proxy-send-timeout"]) >= 3600
    assert ann[p + "proxy-http-version"] == "1.1"
