# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node-side health check on evidence it could not read (house rule, docs/findings.md "Unknown is not broken").

Seen on the loaded test bed (issue 40): the node's nvidia-smi answered ``-q -x`` late, ``nvidia-smi nvlink`` was
skipped with "timeout budget spent", the policy's ``collector_errors.overrides[gpu:timeout]`` is P1 ``reboot``, and
the check drained a healthy node. "I could not see" is not "it is broken": the verdict is unknown (-1) and nothing is
drained; a real fault read alongside the gap still drains. The expected values are the house rule and the policy's
own table (P1 reboot for gpu:timeout), not the program's output; the live test runs the real collectors against
fake tools (tools/simnode's nvidia-smi XML for ``-q -x``, a ``nvlink`` that never answers, Slurm's ``scontrol show
node`` text format).
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

TOOLS = str(Path(__file__).resolve().parents[2] / "tools")
if TOOLS not in sys.path:  # the simulator (tools/simnode), when this file runs alone
    sys.path.insert(0, TOOLS)

from simnode import faults  # noqa: E402
from simnode.capture import capture  # noqa: E402
from simnode.state import default_state  # noqa: E402

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.collect import collect_all  # noqa: E402
from ansible_collections.gpuops.cluster.plugins.plugin_utils.health_check import program as hc  # noqa: E402
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy  # noqa: E402

NODE = "gpu-node-07"
SHOW_NODE = "NodeName=%s Arch=x86_64 CoresPerSocket=8\n   State=IDLE ThreadsPerCore=1\n" % NODE
#: what collect_all records when nvidia-smi nvlink is skipped for lack of time (collectors/gpu.py)
BUDGET = {
    "domain": "gpu",
    "kind": "timeout",
    "message": "nvidia-smi nvlink -s skipped: timeout budget spent",
    "source": "nvidia-smi-xml",
}


def _capture(tmp_path, fault=None):
    s = default_state(NODE)
    s["now"] = time.time()
    if fault:
        faults.apply(s, fault, random.Random(1), gpu=2)
    d = tmp_path / ("cap-%s" % fault)
    capture(s, str(d))
    (d / "scontrol-show-node.txt").write_text(SHOW_NODE)
    return d


def _with_gap(facts):
    """The facts as collect_all returns them when the GPU collector ran out of time (domain and top level)."""
    facts["gpu"].setdefault("errors", []).append(dict(BUDGET))
    facts.setdefault("errors", []).append(dict(BUDGET))
    return facts


def _scontrol(tmp_path):
    """A fake scontrol: ``show node`` answers in Slurm's format, ``update`` is recorded (one JSON line a call)."""
    log = tmp_path / "scontrol.log"
    exe = tmp_path / "bin" / "scontrol"
    exe.parent.mkdir(exist_ok=True)
    exe.write_text(
        "#!%s\nimport json, sys\nif sys.argv[1:2] == ['show']:\n    sys.stdout.write(%r)\nelse:\n"
        "    open(%r, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n" % (sys.executable, SHOW_NODE, str(log))
    )
    exe.chmod(0o755)
    return exe, log


def _calls(log):
    return [json.loads(ln) for ln in log.read_text().splitlines()] if log.exists() else []


def _cfg(tmp_path, exe, **kw):
    raw = {
        "state_file": str(tmp_path / "state" / "state.json"),
        "textfile_dir": str(tmp_path),
        "node_name": NODE,
        "scontrol_path": str(exe),
    }
    raw.update(kw)
    return hc.load_config(raw)


def test_the_policy_makes_a_gpu_timeout_a_p1_reboot():
    """The premise: without the rule a timed-out GPU collector is a drain-worthy finding."""
    over = _policy.DEFAULT_POLICY["collector_errors"]["overrides"]["gpu:timeout"]
    assert (over["severity"], over["action"]) == ("P1", "reboot")
    assert "reboot" in hc.DEFAULTS["drain_actions"] and "P1" in hc.DEFAULTS["drain_severities"]


def test_a_timed_out_collector_is_unknown_and_never_drains(tmp_path, monkeypatch):
    exe, log = _scontrol(tmp_path)
    cfg = _cfg(tmp_path, exe)
    facts = _with_gap(collect_all(capture_dir=str(_capture(tmp_path)), domains=["gpu", "kernel", "slurm", "node"]))
    monkeypatch.setattr(hc, "collect_all", lambda *a, **k: facts)
    res = hc.run(cfg)
    gap = [f for f in res["findings"] if f["check"] == "collector.error"]
    assert gap and gap[0]["severity"] == "P1" and gap[0]["action"] == "reboot"  # the policy's row, reported
    assert res["verdict"] == -1 and res["status"] == "error", res["status_reason"]
    assert "unknown" in res["status_reason"]
    assert res["decision"]["action"] == "none" and not res["drained"] and _calls(log) == []
    prom = (tmp_path / hc.TEXTFILE).read_text()
    assert 'gpuops_node_health{node="%s"} -1\n' % NODE in prom
    assert 'gpuops_node_health_drained{node="%s"} 0\n' % NODE in prom


def test_a_gap_never_lifts_our_own_drain(tmp_path, monkeypatch):
    """Blind after our own drain: the drain stays (neither a new drain nor a resume)."""
    exe, log = _scontrol(tmp_path)
    cfg = _cfg(tmp_path, exe)
    sick = collect_all(capture_dir=str(_capture(tmp_path, "xid79")), domains=["gpu", "kernel", "slurm", "node"])
    monkeypatch.setattr(hc, "collect_all", lambda *a, **k: sick)
    first = hc.run(cfg)
    assert first["decision"]["action"] == "drain"
    reason = first["own_reason"]
    d = _capture(tmp_path)
    (d / "scontrol-show-node.txt").write_text(
        SHOW_NODE.replace("State=IDLE", "State=IDLE+DRAIN") + "   Reason=%s\n" % reason
    )
    blind = _with_gap(collect_all(capture_dir=str(d), domains=["gpu", "kernel", "slurm", "node"]))
    blind["node"]["boot_id"] = "00000000-0000-4000-8000-000000000002"  # a new boot: only the gap is left
    monkeypatch.setattr(hc, "collect_all", lambda *a, **k: blind)
    res = hc.run(cfg)
    assert res["verdict"] == -1 and res["decision"]["action"] == "none" and res["drained"]
    assert len(_calls(log)) == 1  # the first drain only


def test_a_real_fault_beside_a_gap_still_drains(tmp_path, monkeypatch):
    exe, log = _scontrol(tmp_path)
    cfg = _cfg(tmp_path, exe)
    facts = _with_gap(
        collect_all(capture_dir=str(_capture(tmp_path, "xid79")), domains=["gpu", "kernel", "slurm", "node"])
    )
    monkeypatch.setattr(hc, "collect_all", lambda *a, **k: facts)
    res = hc.run(cfg)
    assert res["verdict"] == 3 and res["status"] == "faulty"
    assert res["decision"]["action"] == "drain" and res["own_reason"].startswith(
        "gpuops: gpu."
    )  # Xid 79: the GPU fell off the bus
    assert _calls(log) == [["update", "NodeName=%s" % NODE, "State=DRAIN", "Reason=%s" % res["own_reason"]]]


def test_gaps_are_never_drain_targets(tmp_path):
    exe, _log = _scontrol(tmp_path)
    gap = {"check": "collector.error", "severity": "P1", "action": "reboot", "component": "collector:gpu"}
    xid = {"check": "gpu.xid", "severity": "P1", "action": "reboot", "component": "gpu2"}
    assert hc.drain_targets([gap, xid], _cfg(tmp_path, exe)) == [xid]
    assert hc.evidence_gap("faulty", "1 P0/P1", [gap])[0] == "error"
    assert hc.evidence_gap("faulty", "1 P0/P1", [gap, xid]) == ("faulty", "1 P0/P1")
    assert hc.evidence_gap("degraded", "P2", [gap]) == ("degraded", "P2")


def test_a_hanging_nvlink_on_a_live_node_does_not_drain(tmp_path, monkeypatch):
    """The real collectors, live: nvidia-smi -q -x answers (simulator XML), nvidia-smi nvlink never does."""
    cap = _capture(tmp_path)
    exe, log = _scontrol(tmp_path)
    smi = exe.parent / "nvidia-smi"
    smi.write_text('#!/bin/sh\nif [ "$1" = nvlink ]; then exec sleep 120; fi\ncat %s\n' % (cap / "nvidia-smi-q.xml"))
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", "%s:/usr/bin:/bin" % exe.parent)
    cfg = _cfg(tmp_path, exe, domains=["gpu", "slurm"], call_timeout=1.5, collect_timeout=6.0)
    res = hc.run(cfg)
    gap = [f for f in res["findings"] if f["check"] == "collector.error" and f["component"] == "collector:gpu"]
    # the nvlink call was killed by the 1.5 s per-call limit, under the 5 s a kill needs to count as a hang
    # (collectors/gpu.py _MIN_HANG_EVIDENCE): a part not seen, P2 monitor, never a drain
    assert gap and gap[0]["code"] == "skipped" and gap[0]["severity"] == "P2", res["findings"]
    assert res["decision"]["action"] == "none" and _calls(log) == [], res
