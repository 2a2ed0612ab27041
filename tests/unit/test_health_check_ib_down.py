# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node-side health check on an IB port that stays down (issue 40: IB port down -> drained < 30 s).

Facts from tools/simnode captures (ibstat and sysfs in the real tools' formats) read by the collection's parsers:
the ``ib_port_down`` fault turns one port DOWN (physically Disabled) while its peers stay Active. The expected
behaviour is the contract of ``health_check_ib_down_runs`` (docs/health_check.md): one run never drains, a flap
that came back starts from zero, the third consecutive DOWN run drains with the owned reason, an Active port
lifts the drain, 0 turns it off.
"""

from __future__ import annotations

import json
import random
import time

import pytest
from simnode import faults
from simnode.capture import capture
from simnode.state import default_state

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.collect import collect_all
from ansible_collections.gpuops.cluster.plugins.plugin_utils.health_check import program as hc

NODE = "gpu-node-07"
DOMAINS = ["gpu", "kernel", "ib", "slurm", "node"]


def _facts(tmp_path, down, state="IDLE", reason=None, boot="00000000-0000-4000-8000-000000000001"):
    s = default_state(NODE)
    s["now"] = time.time()
    s["boot_id"] = boot
    if down:
        faults.apply(s, "ib_port_down", random.Random(1))
    d = tmp_path / ("cap-%d" % len(list(tmp_path.glob("cap-*"))))
    capture(s, str(d))
    text = "NodeName=%s Arch=x86_64 CoresPerSocket=8\n   State=%s ThreadsPerCore=1\n" % (NODE, state)
    if reason:
        text += "   Reason=%s [root@2026-12-03T08:00:00]\n" % reason
    (d / "scontrol-show-node.txt").write_text(text)
    return collect_all(capture_dir=str(d), domains=DOMAINS)


@pytest.fixture
def scontrol(tmp_path):
    log = tmp_path / "scontrol.log"
    exe = tmp_path / "scontrol"
    exe.write_text('#!/bin/sh\necho "$*" >> %s\n' % log)
    exe.chmod(0o755)
    return exe, log


def _cfg(tmp_path, exe, **kw):
    raw = {"state_file": str(tmp_path / "st" / "state.json"), "node_name": NODE, "scontrol_path": str(exe)}
    raw.update(kw)
    return hc.load_config(raw)


def _run(monkeypatch, cfg, facts):
    monkeypatch.setattr(hc, "collect_all", lambda *a, **k: facts)
    return hc.run(cfg)


def _calls(log):
    return log.read_text().splitlines() if log.exists() else []


def test_the_fault_is_a_port_down_finding(tmp_path):
    """The premise: the simulator's port-down fault reads as an ib.port_state DOWN finding (not drained alone)."""
    facts = _facts(tmp_path, True)
    ports = [p for h in facts["ib"]["hcas"] for p in h["ports"] if p.get("state") == "DOWN"]
    assert len(ports) == 1, ports


def test_drained_on_the_third_consecutive_down_run_then_resumed(tmp_path, monkeypatch, scontrol):
    exe, log = scontrol
    cfg = _cfg(tmp_path, exe)
    down = _facts(tmp_path, True)
    r1 = _run(monkeypatch, cfg, down)
    port = [f for f in r1["findings"] if f["check"] == "ib.port_state"]
    assert port and port[0]["code"] == "DOWN" and r1["verdict"] == 3
    assert r1["decision"]["action"] == "none" and _calls(log) == []  # one run: never
    r2 = _run(monkeypatch, cfg, down)
    assert r2["decision"]["action"] == "none" and _calls(log) == []
    r3 = _run(monkeypatch, cfg, down)
    reason = "gpuops: ib.port_state %s" % port[0]["component"]
    assert r3["decision"]["action"] == "drain" and r3["own_reason"] == reason
    assert _calls(log) == ["update NodeName=%s State=DRAIN Reason=%s" % (NODE, reason)]
    # still down, drained by us: nothing more
    held = _facts(tmp_path, True, "IDLE+DRAIN", reason)
    assert _run(monkeypatch, cfg, held)["decision"]["action"] == "none" and len(_calls(log)) == 1
    # the port Active again: our drain lifted
    back = _facts(tmp_path, False, "IDLE+DRAIN", reason)
    r5 = _run(monkeypatch, cfg, back)
    assert r5["decision"]["action"] == "resume" and _calls(log)[-1] == "update NodeName=%s State=RESUME" % NODE


def test_a_flap_starts_from_zero(tmp_path, monkeypatch, scontrol):
    exe, log = scontrol
    cfg = _cfg(tmp_path, exe)
    down, up = _facts(tmp_path, True), _facts(tmp_path, False)
    for facts in (down, down, up, down, down, up, down):
        assert _run(monkeypatch, cfg, facts)["decision"]["action"] == "none"
    assert _calls(log) == []


def test_zero_turns_it_off(tmp_path, monkeypatch, scontrol):
    exe, log = scontrol
    cfg = _cfg(tmp_path, exe, ib_down_runs=0)
    down = _facts(tmp_path, True)
    for _i in range(4):
        assert _run(monkeypatch, cfg, down)["decision"]["action"] == "none"
    assert _calls(log) == []


@pytest.mark.parametrize("bad", [-1, 101, 2.5, True, "3"])
def test_bad_setting_is_a_clear_error(bad):
    with pytest.raises(hc.ConfigError, match="ib_down_runs"):
        hc.load_config({"ib_down_runs": bad})


def test_streaks_are_pure_and_bounded():
    f = {"check": "ib.port_state", "code": "DOWN", "component": "mlx5_0/1"}
    other = {"check": "ib.port_state", "code": "INIT", "component": "mlx5_1/1"}  # the SM's, not a down port
    assert hc.ib_down_streaks([f, other], None) == {"mlx5_0/1": 1}
    assert hc.ib_down_streaks([f], {"mlx5_0/1": 2, "mlx5_2/1": 5}) == {"mlx5_0/1": 3}
    assert hc.ib_down_streaks([f], {"mlx5_0/1": "x"}) == {"mlx5_0/1": 1}  # a broken state file starts over
    assert json.dumps(hc.ib_down_streaks([], {"a": 1})) == "{}"
