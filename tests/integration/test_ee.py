# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The execution environment: `ansible-builder create` (no image build: no container engine here) makes the
build context from execution-environment.yml, and ansible-builder's own introspection finds the collection's
dependencies through meta/execution-environment.yml once the built collection is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
VERSION = yaml.safe_load(open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8"))["version"]
TARBALL = "gpuops-cluster-%s.tar.gz" % VERSION


def run(cmd, cwd, **kw):
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ["PATH"])
    for k in ("ANSIBLE_CONFIG", "ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_COLLECTIONS_PATHS"):
        env.pop(k, None)
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=180, check=False, **kw)
    assert proc.returncode == 0, "%s\n%s\n%s" % (cmd, proc.stdout[-2000:], proc.stderr[-2000:])
    return proc.stdout


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    """A copy of the EE definition and its files in a temp dir (nothing is written into the checkout)."""
    work = tmp_path_factory.mktemp("ee")
    for f in ("execution-environment.yml", "requirements.txt", "bindep.txt"):
        shutil.copy(os.path.join(ROOT, f), work / f)
    (work / "build" / "ee").mkdir(parents=True)
    run(
        [os.path.join(BIN, "ansible-galaxy"), "collection", "build", ROOT, "--output-path", str(work / "build" / "ee")],
        work,
    )
    assert (work / "build" / "ee" / TARBALL).is_file()
    ctx = work / "context"
    run(
        [os.path.join(BIN, "ansible-builder"), "create", "-f", "execution-environment.yml", "-c", str(ctx)]
        + ["--output-filename", "Containerfile"],
        work,
    )
    return {"work": work, "ctx": ctx}


def test_definition_is_v3_and_names_its_files():
    ee = yaml.safe_load(open(os.path.join(ROOT, "execution-environment.yml"), encoding="utf-8"))
    assert ee["version"] == 3
    deps = ee["dependencies"]
    assert deps["python"] == "requirements.txt" and deps["system"] == "bindep.txt"
    assert "ansible-core" in deps["ansible_core"]["package_pip"]
    names = [c["name"] for c in deps["galaxy"]["collections"]]
    assert "community.general" in names and "/build/gpuops/%s" % TARBALL in names, (
        "bump the tarball name with galaxy.yml"
    )
    assert any(f["src"] == "build/ee/" + TARBALL for f in ee["additional_build_files"])
    meta = yaml.safe_load(open(os.path.join(ROOT, "meta", "execution-environment.yml"), encoding="utf-8"))
    assert meta == {"version": 1, "dependencies": {"python": "requirements.txt", "system": "bindep.txt"}}


def test_build_context(context):
    ctx = context["ctx"]
    cf = (ctx / "Containerfile").read_text()
    assert 'ARG EE_BASE_IMAGE="quay.io/centos/centos:stream9"' in cf
    assert "ansible-core>=2.16,<2.20" in cf and "ansible-runner" in cf
    assert "ansible-galaxy collection install" in cf and "introspect" in cf
    assert "ENV GPUOPS_STATE_DIR=/var/lib/gpuops" in cf
    build = ctx / "_build"
    pip = (build / "requirements.txt").read_text()
    for pkg in ("pyghmi", "nvidia-ml-py", "jmespath", "orjson"):
        assert pkg in pip
    bindep = (build / "bindep.txt").read_text()
    assert "ipmitool [platform:rpm platform:dpkg]" in bindep and "openssh-clients [platform:rpm]" in bindep
    reqs = yaml.safe_load((build / "requirements.yml").read_text())
    assert {"name": "/build/gpuops/%s" % TARBALL, "type": "file"} in reqs["collections"]
    assert (build / "gpuops" / TARBALL).stat().st_size > 10000
    assert (build / "scripts" / "introspect.py").is_file()


def test_introspection_finds_the_collection_dependencies(context):
    """What the builder stage does in the image: install the collection, introspect its meta/execution-environment.yml."""
    cols = context["work"] / "collections"
    run(
        [os.path.join(BIN, "ansible-galaxy"), "collection", "install", str(context["work"] / "build" / "ee" / TARBALL)]
        + ["-p", str(cols), "--force", "--no-deps"],
        context["work"],
    )
    out = run(
        [sys.executable, str(context["ctx"] / "_build" / "scripts" / "introspect.py"), "introspect", str(cols)],
        context["work"],
    )
    data = yaml.safe_load(out)
    python = [line for line in data["python"] if "from collection gpuops.cluster" in line]
    system = [line for line in data["system"] if "from collection gpuops.cluster" in line]
    assert any(p.startswith("pyghmi") for p in python) and any(p.startswith("nvidia-ml-py") for p in python)
    assert any(s.startswith("ipmitool") for s in system)
    # and the installed collection does not carry the controller-side tools (galaxy.yml build_ignore)
    installed = cols / "ansible_collections" / "gpuops" / "cluster"
    assert (installed / "meta" / "execution-environment.yml").is_file()
    assert not (installed / "tools").exists()
