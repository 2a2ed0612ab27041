# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tools package (tools/pyproject.toml, docs/install.md): built and installed (not editable) into a fresh
virtual environment, offline; every console script runs from there, and the simulator generates a cluster with
the package data it ships (the real captures it renders from).

The fresh venv has no packages of its own; its runtime dependencies (ansible-runner, PyYAML) and the build
backend (setuptools) are the ones of the interpreter running this test, reached through a .pth file, so that
`pip install --no-deps --no-build-isolation --no-index` needs no network."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.version import Version
from package_helpers import ROOT, clean_env, run

TOOLS = ROOT / "tools"
PROJECT = tomllib.loads((TOOLS / "pyproject.toml").read_text(encoding="utf-8"))["project"]
SCRIPTS = sorted(PROJECT["scripts"])


@pytest.fixture(scope="module")
def venv(tmp_path_factory, package_home) -> dict:
    base = tmp_path_factory.mktemp("tools")
    env = clean_env(package_home, extra={"PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    vdir = base / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", vdir], base, env)
    py = vdir / "bin" / "python"
    site = Path(run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], base, env).stdout.strip())
    (site / "zz-gpuops-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    # build from a copy: an in-tree build would leave build/ and *.egg-info in tools/
    src = base / "src"
    shutil.copytree(TOOLS, src, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build"))
    build = ["--no-build-isolation", "--no-index"] if offline_build() else []
    run(
        [sys.executable, "-m", "pip", "--python", py, "install", "--no-deps", "--quiet"] + build + [src],
        base,
        env,
        timeout=300,
    )
    return {"bin": vdir / "bin", "py": py, "site": site, "base": base, "env": env}


def offline_build() -> bool:
    """Whether this interpreter can build the wheel itself: setuptools >= 70.1 (bdist_wheel built in) or the
    `wheel` package. Otherwise pip builds in an isolated environment with setuptools from its index (the one
    `make setup` uses); the report of this stage says which (test_build_was_offline)."""
    try:
        import wheel  # noqa: F401

        return True
    except ImportError:
        import setuptools

        return Version(setuptools.__version__) >= Version("70.1")


def test_installed_not_editable_with_every_console_script(venv):
    assert {"gpuops-runbook", "gpuops-audit", "gpuops-sim", "gpuops-simnode"} <= set(SCRIPTS)
    for script in SCRIPTS:
        exe = venv["bin"] / script
        assert exe.is_file(), script
        assert exe.read_text().splitlines()[0] == "#!%s" % venv["py"], script
    code = "import json, gpuops_runbook, gpuops_audit, simcluster, simnode; print(json.dumps([m.__file__ for m in "
    code += "(gpuops_runbook, gpuops_audit, simcluster, simnode)]))"
    files = json.loads(run([venv["py"], "-c", code], venv["base"], venv["env"]).stdout)
    assert all(f.startswith(str(venv["site"])) for f in files), files


@pytest.mark.parametrize("script", SCRIPTS)
def test_console_script_help(venv, script):
    args = ["faults"] if script == "gpuops-simnode" else ["--help"]
    proc = run([venv["bin"] / script] + args, venv["base"], venv["env"])
    assert proc.stdout.strip() and "Traceback" not in proc.stderr
    if script == "gpuops-simnode":
        assert "xid79" in proc.stdout
    else:
        assert proc.stdout.startswith("usage: %s" % script), proc.stdout[:200]


def test_simulator_generates_a_cluster(venv, tmp_path):
    out = tmp_path / "sim"
    proc = run([venv["bin"] / "gpuops-sim", "--nodes", "4", "--out", out], tmp_path, venv["env"])
    assert "4 nodes, 2 faulty" in proc.stdout  # `--faults default` keeps half of a small cluster healthy
    hosts = yaml.safe_load((out / "inventory" / "hosts.yml").read_text())["all"]["children"]["gpu_nodes"]["hosts"]
    assert sorted(hosts) == ["gpu-node-%02d" % i for i in range(1, 5)]
    key = json.loads((out / "answer_key.json").read_text())
    for h, hv in hosts.items():
        cap = Path(hv["gpuops_capture_dir"])
        assert (cap / "nvidia-smi-q.txt").is_file() and (cap / "kernel.log").is_file(), h
        if not key["hosts"][h]:
            # a healthy node's -q -x is rendered from the real capture shipped as package data (simnode/templates)
            assert (cap / "nvidia-smi-q.xml").stat().st_size > 10000, h
    assert key["nodes"] == 4 and sum(1 for e in key["hosts"].values() if not e) == 2


def test_simnode_answers_as_nvidia_smi(venv, tmp_path):
    state = tmp_path / "node.json"
    run([venv["bin"] / "gpuops-simnode", "--state", state, "init", "gpu-node-01"], tmp_path, venv["env"])
    proc = run([venv["bin"] / "gpuops-simnode", "--state", state, "nvidia-smi", "-L"], tmp_path, venv["env"])
    assert proc.stdout.count("GPU ") == 8 and "H100" in proc.stdout


def test_runbook_hook_reads_a_collection_root(venv, tmp_path):
    proc = run([venv["bin"] / "gpuops-runbook", "--root", ROOT, "list"], venv["base"], venv["env"])
    assert len(proc.stdout.splitlines()) >= 5 and "coolant_leak" in proc.stdout
    # installed tools find the installed collection (here: the checkout's build/ansible_collections link) by itself
    env = dict(venv["env"], ANSIBLE_COLLECTIONS_PATH=str(ROOT / "build"))
    assert run([venv["bin"] / "gpuops-runbook", "list"], tmp_path, env).stdout == proc.stdout
    lost = run([venv["bin"] / "gpuops-runbook", "list"], tmp_path, venv["env"], ok=False)
    assert lost.returncode != 0 and "Traceback" not in lost.stderr and "catalog" in lost.stderr, lost.stderr


def _untracked_tools() -> set:
    out = subprocess.run(
        ["git", "ls-files", "--others", "--", "tools"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return {ln for ln in out.splitlines() if "__pycache__" not in ln}


#: what was there before this module's builds (`make setup`'s editable install leaves tools/*.egg-info)
_BEFORE = _untracked_tools()


def test_nothing_written_into_the_source_tree():
    """The build ran on a copy: no build/ or *.egg-info appeared in tools/ (untracked files, ignored ones too)."""
    new = _untracked_tools() - _BEFORE
    assert not new, sorted(new)


def test_build_was_offline():
    """The tools built with --no-index: requirements-dev.txt pins a wheel-capable setuptools (>= 70.1) and
    `wheel`, so a dev venv without them is a broken setup, not an expected failure."""
    assert offline_build(), "setuptools < 70.1 and no `wheel` in the venv: run make setup (requirements-dev.txt)"
