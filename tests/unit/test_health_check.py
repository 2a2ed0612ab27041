# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node-side health check (plugins/plugin_utils/health_check/program.py, _health_check_bundle.py).

Facts come from simulator captures (tools/simnode: the real tools' output formats) read by the collection's own
parsers; the hang test runs the built zipapp with fake tools that never answer.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from simnode import faults
from simnode.capture import capture
from simnode.state import default_state

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.collect import collect_all
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.slurm import parse_show_node
from ansible_collections.gpuops.cluster.plugins.plugin_utils.health_check import program as hc
from ansible_collections.gpuops.cluster.plugins.plugin_utils.health_check import bundle
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pipeline as _inspect

NODE = "gpu-node-07"


def _cfg(tmp_path, **kw):
    raw = {"state_file": str(tmp_path / "state" / "state.json"), "textfile_dir": str(tmp_path), "node_name": NODE}
    raw.update(kw)
    return hc.load_config(raw)


def _show_node(state="IDLE", reason=None):
    text = "NodeName=%s Arch=x86_64 CoresPerSocket=8\n   State=%s ThreadsPerCore=1\n" % (NODE, state)
    if reason:
        text += "   Reason=%s [root@2026-12-03T08:00:00]\n" % reason
    return text


def _facts(tmp_path, fault=None, slurm_state="IDLE", reason=None, domains=("gpu", "kernel", "slurm", "node")):
    """Facts of a simulated node as collect_all reads them (capture directory of the real tool outputs)."""
    s = default_state(NODE)
    s["now"] = time.time()
    if fault:
        faults.apply(s, fault, random.Random(1), gpu=2)
    d = tmp_path / ("cap-%s-%d" % (fault, len(list(tmp_path.iterdir()))))
    capture(s, str(d))
    (d / "scontrol-show-node.txt").write_text(_show_node(slurm_state, reason))
    facts = collect_all(capture_dir=str(d), domains=list(domains) if domains else None)
    return facts, d


@pytest.fixture
def scontrol(tmp_path):
    """A fake scontrol that records its argv (one JSON line per call)."""
    log = tmp_path / "scontrol.log"
    exe = tmp_path / "scontrol"
    exe.write_text(
        "#!%s\nimport json, sys\nopen(%r, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n" % (sys.executable, str(log))
    )
    exe.chmod(0o755)
    return exe, log


def _run(monkeypatch, cfg, facts):
    monkeypatch.setattr(hc, "collect_all", lambda *a, **k: facts)
    return hc.run(cfg)


def _calls(log):
    return [json.loads(ln) for ln in log.read_text().splitlines()] if log.exists() else []


# -- verdict and targets ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "status,severities,code",
    [
        ("faulty", ["P1"], 3),
        ("unreachable", ["P1"], 3),
        ("error", ["P2"], -1),
        ("degraded", ["P2", "P3"], 2),
        ("healthy", ["P3"], 1),
        ("healthy", [], 0),
    ],
)
def test_verdict(status, severities, code):
    assert hc.verdict(status, [{"severity": s} for s in severities]) == code


def test_drain_targets_follow_the_policy(tmp_path):
    cfg = _cfg(tmp_path)
    fs = [
        {"check": "gpu.xid", "severity": "P1", "action": "reboot", "component": "gpu2"},
        {"check": "gpu.ecc", "severity": "P1", "action": "monitor", "component": "gpu1"},
        {"check": "gpu.pcie", "severity": "P2", "action": "isolate", "component": "gpu3"},
        {"check": "ib.port_state", "severity": "P1", "action": "isolate", "component": "mlx5_0/1"},  # correlated
        {
            "check": "gpu.xid",
            "severity": "P1",
            "action": "monitor",
            "component": "gpu4",
            "evidence": {"withheld_action": "reboot"},
        },
    ]
    assert hc.drain_targets(fs, cfg) == fs[:1]
    assert hc.drain_targets(fs, _cfg(tmp_path, drain_actions=["isolate"])) == []


# -- decisions ------------------------------------------------------------------------------------------------

T = [{"check": "gpu.xid", "component": "gpu2", "message": "Xid 79"}]
OURS = "gpuops: gpu.xid gpu2"


def _status(state="IDLE", reason=None):
    return hc.node_status(parse_show_node(_show_node(state, reason))[0], [], "gpuops:")


@pytest.mark.parametrize(
    "status,targets,code,recorded,action,ours",
    [
        (_status(), T, 3, None, "drain", True),  # fault, node in service: drain with our reason
        (_status("IDLE+DRAIN", OURS), T, 3, OURS, "none", True),  # already ours
        (_status("IDLE+DRAIN", "bad fan"), T, 3, None, "none", False),  # a human's drain: left alone
        (_status("IDLE+DRAIN", OURS + "; fixed by bob"), [], 0, OURS, "none", False),  # ours edited by a human
        (_status("IDLE+DRAIN", OURS), [], 1, OURS, "resume", False),  # clean: our drain lifted
        (_status("IDLE+DRAIN", OURS), [], 2, OURS, "resume", False),  # P2 only: no reason to stay out
        (_status("IDLE+DRAIN", OURS), [], -1, OURS, "none", True),  # blind: keep, never resume
        (_status("IDLE+DRAIN", OURS), [], 3, OURS, "none", True),  # still failed (not ours to decide)
        (_status("IDLE+DRAIN", "bad fan"), [], 0, None, "none", False),  # clean, human drain: never resumed
        (_status("IDLE+DRAIN", OURS), [], 0, None, "none", False),  # no record of ours: not ours
        (None, T, 3, OURS, "none", True),  # scheduler unreadable: nothing done, ownership kept
        (_status("DOWN+DRAIN", OURS), [], 0, OURS, "none", True),  # down: not resumed from here
    ],
)
def test_decide(tmp_path, status, targets, code, recorded, action, ours):
    plan = hc.decide(status, targets, code, recorded, _cfg(tmp_path))
    assert (plan["action"], plan["ours"]) == (action, ours), plan
    if action == "drain":
        assert plan["reason"] == OURS


def test_decide_report_only(tmp_path):
    plan = hc.decide(_status(), T, 3, None, _cfg(tmp_path, drain=False))
    assert plan["action"] == "none" and not plan["ours"]


def test_reason_and_labels_are_bounded():
    f = {"check": "gpu.xid", "component": 'bmc/PSU2 Status"\n{evil}'}
    assert hc.own_reason(f, "gpuops:") == "gpuops: gpu.xid bmc/PSU2_Status_evil"
    assert len(hc.label("x" * 500)) == 48 and hc.label(None) == "none"


# -- whole runs -------------------------------------------------------------------------------------------------


def test_xid79_drains_then_resumes_after_a_new_boot(tmp_path, monkeypatch, scontrol):
    exe, log = scontrol
    cfg = _cfg(tmp_path, scontrol_path=str(exe))
    sick, _d = _facts(tmp_path, "xid79")
    r1 = _run(monkeypatch, cfg, sick)
    assert r1["verdict"] == 3 and r1["decision"]["action"] == "drain" and r1["drained"]
    reason = r1["own_reason"]
    assert reason.startswith("gpuops: gpu.") and _calls(log) == [
        ["update", "NodeName=%s" % NODE, "State=DRAIN", "Reason=%s" % reason]
    ]
    st = tmp_path / "state" / "state.json"
    assert stat.S_IMODE(st.stat().st_mode) == 0o600 and stat.S_IMODE(st.parent.stat().st_mode) == 0o700
    prom = (tmp_path / hc.TEXTFILE).read_text()
    assert stat.S_IMODE((tmp_path / hc.TEXTFILE).stat().st_mode) == 0o640  # as gpuops.prom: group, not world
    assert 'gpuops_node_health{node="%s"} 3\n' % NODE in prom
    assert 'gpuops_node_health_drained{node="%s"} 1\n' % NODE in prom
    assert 'check="gpu.xid",severity="P1",action="reboot"' in prom
    assert 'gpuops_node_health_policy_info{node="%s",policy_version="%s"} 1' % (NODE, r1["policy_version"]) in prom
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    # the drain in place, the fault still in this boot: nothing more
    drained, _d = _facts(tmp_path, "xid79", "IDLE+DRAIN", reason)
    assert _run(monkeypatch, cfg, drained)["decision"]["action"] == "none" and len(_calls(log)) == 1
    # the fault hidden (tools read clean) in the same boot: the policy still remembers it
    clean, _d = _facts(tmp_path, None, "IDLE+DRAIN", reason)
    clean["node"]["boot_id"] = sick["node"]["boot_id"]
    r3 = _run(monkeypatch, cfg, clean)
    assert r3["verdict"] == 3 and r3["drained"] and len(_calls(log)) == 1
    # a new boot: clean, our drain lifted
    clean["node"]["boot_id"] = "00000000-0000-4000-8000-000000000001"
    r4 = _run(monkeypatch, cfg, clean)
    assert r4["decision"]["action"] == "resume" and not r4["drained"] and r4["own_reason"] is None
    assert _calls(log)[-1] == ["update", "NodeName=%s" % NODE, "State=RESUME"]


def test_the_same_verdict_as_the_inspection(tmp_path, monkeypatch, scontrol):
    """One code path: the node program and the controller's inspection judge the same evidence alike."""
    exe, _log = scontrol
    for fault in (None, "xid79", "row_remap_pending"):
        facts, d = _facts(tmp_path, fault, domains=None)  # the same evidence the inspection reads
        report = _inspect.inspect_nodes({NODE: {"capture_dir": str(d)}}, include_facts=False)
        node = report["nodes"][NODE]
        cfg = _cfg(tmp_path, scontrol_path=str(exe), drain=False, state_file=str(tmp_path / str(fault) / "st.json"))
        res = _run(monkeypatch, cfg, facts)
        assert res["status"] == node["status"], fault
        assert {(f["check"], f["component"], f["severity"], f["action"]) for f in res["findings"]} == {
            (f["check"], f["component"], f["severity"], f["action"]) for f in node["findings"]
        }, fault
        assert res["policy_version"] == node["policy_hash"].split(":")[1][:12]


def test_unreadable_evidence_is_unknown_and_never_drains(tmp_path, monkeypatch, scontrol):
    exe, log = scontrol
    cfg = _cfg(tmp_path, scontrol_path=str(exe))
    blind = {"hostname": NODE, "errors": [{"domain": "collect", "kind": "timeout", "message": "timed out"}]}
    res = _run(monkeypatch, cfg, blind)
    assert res["verdict"] == -1 and res["decision"]["action"] == "none" and _calls(log) == []
    assert 'gpuops_node_health{node="%s"} -1' % NODE in (tmp_path / hc.TEXTFILE).read_text()


def test_config_errors_are_clear(tmp_path):
    with pytest.raises(hc.ConfigError, match="unknown configuration key"):
        hc.load_config({"colect_timeout": 3})
    with pytest.raises(hc.ConfigError, match="collect_timeout"):
        hc.load_config({"collect_timeout": 0})
    with pytest.raises(hc.ConfigError, match="policy: unknown policy key"):
        hc.load_config({"policy": {"nope": 1}})
    assert hc.main(["--config", str(tmp_path / "missing.json")]) == 2


# -- the bundle ----------------------------------------------------------------------------------------------------


def test_bundle_is_reproducible_and_versioned(tmp_path):
    a = bundle.build({"state_file": "/x"})
    assert a == bundle.build({"state_file": "/x"})
    assert bundle.version_of(a) != bundle.version_of(bundle.build({"state_file": "/y"}))
    assert a.startswith(b"#!/usr/bin/python3 -sE\n")
    with pytest.raises(ValueError):
        bundle.build({}, interpreter="python3")


def _fake(bindir, name, body):
    p = bindir / name
    p.write_text("#!/bin/sh\n" + body + "\n")
    p.chmod(0o755)


def test_hanging_tools_are_bounded(tmp_path):
    """Every tool hangs (GPU driver, kernel log, scheduler): the built program still ends, in bounded time."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("nvidia-smi", "dmesg", "journalctl", "scontrol", "ibstat"):
        _fake(bindir, tool, "exec sleep 120")
    prog = tmp_path / "gpuops-health-check"
    cfg = {
        "state_file": str(tmp_path / "st" / "state.json"),
        "textfile_dir": str(tmp_path),
        "node_name": NODE,
        "call_timeout": 1.0,
        "collect_timeout": 2.5,
        "scontrol_timeout": 1.0,
    }
    prog.write_bytes(bundle.build(cfg, interpreter=sys.executable))
    prog.chmod(0o755)
    env = {"PATH": "%s:/usr/bin:/bin" % bindir}
    t0 = time.monotonic()
    proc = subprocess.run([str(prog), "--json"], env=env, capture_output=True, text=True, timeout=60, check=False)
    took = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    # the bounds are 2.5 s (collection) + 1 s (scontrol); the tools would hang 120 s. The margin is for a loaded
    # 2-core CI machine: what is tested is that no hang is waited out, not the machine's speed.
    assert took < 20, took
    assert res["run_seconds"] < 12
    assert res["decision"]["action"] == "none"  # the scheduler could not be read: nothing done
    assert res["verdict"] == -1  # nothing could be read in time: unknown, never "failed"
    assert Path(tmp_path / hc.TEXTFILE).exists()


def test_policy_overrides_change_the_version(tmp_path):
    base = hc.load_config({})
    other = hc.load_config(
        {"policy": _policy.merge_policy(None, {"thresholds": {"temperature": {"gpu_fallback_p2_c": 80}}})}
    )
    assert hc.policy_version(base["policy"]) != hc.policy_version(other["policy"])


def test_the_program_runs_on_python_3_8(tmp_path):
    """The node side is Python 3.8+: the built zipapp runs under 3.8 when the machine has one."""
    repo = Path(__file__).resolve().parents[2]
    py38 = None
    for cand in (str(repo / "build" / "pybin" / "python3.8"), shutil.which("python3.8")):
        ok = cand and subprocess.run([cand, "-c", "import sys; assert sys.version_info[:2] == (3, 8)"], check=False)
        if ok and ok.returncode == 0:
            py38 = cand
            break
    if not py38:
        pytest.skip("no working python3.8 (make setup links the pyenv interpreters into build/pybin)")
    prog = tmp_path / "prog"
    prog.write_bytes(bundle.build({"node_name": NODE, "state_file": str(tmp_path / "s" / "state.json")}, py38))
    prog.chmod(0o755)
    proc = subprocess.run([str(prog), "--dry-run", "--json"], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["schema"] == hc.SCHEMA and res["node"] == NODE and res["verdict"] in (-1, 0, 1, 2, 3)
    assert not (tmp_path / "s").exists()  # --dry-run writes nothing


def test_the_alert_rules_fire_on_the_programs_own_textfile(tmp_path, monkeypatch, scontrol):
    """The contract end to end: the node program's real gpuops_node_health.prom for an Xid 79 node, fed as input
    series to promtool against the generated rule file, fires GpuopsNodeHealthFailed for that node and finding;
    a healthy node's file fires nothing."""
    import yaml

    promtool = shutil.which("promtool")
    if not promtool:
        pytest.fail("promtool not installed (tests/testbed/deps.sh: prometheus)")
    exe, _log = scontrol
    rules = Path(__file__).resolve().parents[2] / "extensions" / "prometheus" / "gpuops-rules.yml"
    files = {}
    for fault in ("xid79", None):
        cfg = _cfg(tmp_path / str(fault), scontrol_path=str(exe), drain=False)
        facts, _d = _facts(tmp_path, fault)
        _run(monkeypatch, cfg, facts)
        files[fault] = (tmp_path / str(fault) / hc.TEXTFILE).read_text()

    def series(text):
        out = []
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out.append({"series": name, "values": "%sx5" % value})
        return out

    sick = [ln for ln in files["xid79"].splitlines() if ln.startswith("gpuops_node_health_finding{")]
    finding = next(ln for ln in sick if 'check="gpu.xid"' in ln)
    labels = dict(kv.split("=", 1) for kv in finding[finding.index("{") + 1 : finding.index("}")].split(","))
    labels = {k: v.strip('"') for k, v in labels.items()}
    tests = {
        "rule_files": [str(rules)],
        "evaluation_interval": "5s",
        "tests": [
            {
                "interval": "5s",
                "input_series": series(files["xid79"]),
                "alert_rule_test": [{"eval_time": "10s", "alertname": "GpuopsNodeHealthFailed", "exp_alerts": []}],
            },
            {
                "interval": "5s",
                "input_series": series(files[None]),
                "alert_rule_test": [{"eval_time": "10s", "alertname": "GpuopsNodeHealthFailed", "exp_alerts": []}],
            },
        ],
    }
    # what must fire for the sick node: one alert per P0/P1 finding series, carrying its labels
    want = []
    for ln in sick:
        lab = dict(kv.split("=", 1) for kv in ln[ln.index("{") + 1 : ln.index("}")].split(","))
        lab = {k: v.strip('"') for k, v in lab.items()}
        if lab["severity"] in ("P0", "P1"):
            want.append(lab)
    assert labels in want
    rule = next(
        r
        for g in yaml.safe_load(rules.read_text())["groups"]
        for r in g["rules"]
        if r.get("alert") == "GpuopsNodeHealthFailed"
    )

    def render(template, lab):
        return re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: lab.get(m.group(1), ""), template)

    tests["tests"][0]["alert_rule_test"][0]["exp_alerts"] = [
        {
            "exp_labels": dict(lab, **{k: str(v) for k, v in rule.get("labels", {}).items()}),
            "exp_annotations": {k: render(v, lab) for k, v in rule.get("annotations", {}).items()},
        }
        for lab in want
    ]
    path = tmp_path / "contract-test.yml"
    path.write_text(yaml.safe_dump(tests, sort_keys=False))
    proc = subprocess.run(
        [promtool, "test", "rules", str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
