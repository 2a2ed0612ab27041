# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""inventories/sim: the small committed example cluster (ansible.cfg's default inventory in a checkout; not in the
tarball). It must be exactly what `make sim-example` writes with today's simulator, and inspect as its answer key
says. Larger simulated clusters are generated, never committed (`make demo`: build/sim)."""

from __future__ import annotations

import configparser
import json
import re
import shlex
import sys
from pathlib import Path

from package_helpers import ROOT, clean_env, run

EXAMPLE = ROOT / "inventories" / "sim"


def _tree(base: Path) -> dict:
    return {p.relative_to(base).as_posix(): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


def _example_args() -> list:
    m = re.search(r"^SIM_EXAMPLE_ARGS := (.+)$", (ROOT / "Makefile").read_text(), re.M)
    assert m, "Makefile: SIM_EXAMPLE_ARGS"
    return shlex.split(m.group(1))


def test_example_is_what_the_simulator_writes(tmp_path, package_home):
    out = tmp_path / "sim"
    gen = [sys.executable, ROOT / "tools" / "simcluster" / "generate.py"]
    run(gen + _example_args() + ["--out", out], tmp_path, clean_env(package_home))
    want, have = _tree(out), _tree(EXAMPLE)
    assert sorted(want) == sorted(have), "run `make sim-example` and commit inventories/sim"
    stale = sorted(f for f in want if want[f] != have[f])
    assert not stale, "run `make sim-example` and commit inventories/sim: %s" % stale[:10]
    assert len(have) < 1000 and sum(map(len, have.values())) < 1_000_000, "the example must stay small"


def test_example_is_the_default_inventory_and_inspects(tmp_path, package_home):
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "ansible.cfg")
    assert (ROOT / cfg["defaults"]["inventory"]).resolve() == (EXAMPLE / "hosts.yml").resolve()
    # the developer loop: the checkout's ansible.cfg and build/ (make setup), no -i
    env = clean_env(package_home, extra={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")})
    report = tmp_path / "report"
    run(["ansible-playbook", ROOT / "playbooks" / "inspect.yml", "-e", "gpuops_report_dir=%s" % report], ROOT, env)
    doc = json.loads((report / "report.json").read_text())
    key = json.loads((EXAMPLE / ".sim" / "answer_key.json").read_text())
    for host, expected in key["hosts"].items():
        got = {(f["check"], f["severity"]) for f in doc["nodes"][host]["findings"]}
        assert {(e["check"], e["severity_hint"]) for e in expected} <= got, (host, got)
        assert bool(expected) == (doc["nodes"][host]["status"] != "healthy"), (host, doc["nodes"][host]["status"])
