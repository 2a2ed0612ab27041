# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""InfiniBand checks (_checks/ib.py): port state/rate, error rates, link flaps."""

from __future__ import annotations


import pytest

from checks_helpers import PROFILE, facts, only, port, run


# ------------------------------------------------------------------------------- IB


def test_ib_port_states():
    init = [{"name": "mlx5_0", "ports": [port("mlx5_0", state="INIT", phys_state="LinkUp")]}]
    f = only(run(facts(hcas=init))[0], "ib.port_state", "mlx5_0/1", "INIT")[0]
    assert f["severity"] == "P1"
    down = [
        {"name": "mlx5_0", "ports": [port("mlx5_0", state="DOWN", phys_state="Polling")]},
        {"name": "mlx5_1", "ports": [port("mlx5_1", rate_gbps=200.0)]},
        {"name": "mlx5_4", "ports": [port("mlx5_4", state="DOWN", link_layer="Ethernet")]},
    ]
    assert not only(run(facts(hcas=down))[0], "ib.port_state")  # unknown hardware: down ports may be unused
    fs = run(facts(hcas=down), PROFILE)[0]
    assert only(fs, "ib.port_state", "mlx5_0/1", "DOWN")[0]["action"] == "reseat"
    assert only(fs, "ib.port_rate", "mlx5_1/1")[0]["severity"] == "P2"
    assert not only(fs, "ib.port_state", "mlx5_4/1")
    fs = run(facts(hcas=down[:1]), PROFILE)[0]
    assert only(fs, "ib.port_state", "mlx5_1/1", "missing")


def test_ib_port_count_profile():
    prof = dict(PROFILE, ib_ports=4)
    fs = run(facts(), prof)[0]
    assert only(fs, "ib.port_state", "node", "missing")[0]["evidence"]["expected"] == 4


def _ib(counters, fw="28.39.1002", saturated=None):
    return [
        {"name": "mlx5_0", "fw_version": fw, "ports": [port("mlx5_0", counters=counters, saturated=saturated or [])]}
    ]


def test_ib_error_rate_from_two_readings_and_baselines():
    base = {"symbol_error": 10, "link_downed": 3, "port_rcv_errors": 0}
    fs, st = run(facts(hcas=_ib(base)))
    assert not only(fs, "ib.errors")  # first reading: baseline only
    t1 = 1764669600.0 + 3600
    fs, st1 = run(facts(hcas=_ib(dict(base, symbol_error=510)), ib_at=t1), state=st)
    f = only(fs, "ib.errors", "mlx5_0/1", "symbol_error")[0]
    assert f["evidence"]["delta"] == 500 and f["evidence"]["per_hour"] == pytest.approx(500)
    assert f["action"] == "reseat"
    # below the threshold: 100/h < 120/h
    fs, _unused = run(facts(hcas=_ib(dict(base, symbol_error=110)), ib_at=t1), state=st)
    assert not only(fs, "ib.errors")
    # counters cleared (negative delta): new baseline, no finding
    fs, st2 = run(facts(hcas=_ib({"symbol_error": 0, "link_downed": 0}), ib_at=t1), state=st)
    assert not only(fs, "ib.errors") and not only(fs, "ib.link_flap")
    assert st2["ib"]["ports"]["mlx5_0/1"]["counters"]["symbol_error"] == 0
    # a new boot id: new baseline without a finding
    fs, _unused = run(facts(boot="b2", hcas=_ib(dict(base, symbol_error=9999, link_downed=50)), ib_at=t1), state=st)
    assert not only(fs, "ib.errors") and not only(fs, "ib.link_flap")
    # new HCA firmware: new baseline without a finding
    fs, st3 = run(facts(hcas=_ib(dict(base, symbol_error=9999), fw="28.40.1000"), ib_at=t1), state=st)
    assert not only(fs, "ib.errors") and st3["ib"]["ports"]["mlx5_0/1"]["fw_version"] == "28.40.1000"


def test_ib_short_interval_keeps_older_baseline():
    base = {"symbol_error": 10, "link_downed": 0}
    _unused, st = run(facts(hcas=_ib(base)))
    fs, st1 = run(facts(hcas=_ib(dict(base, symbol_error=11)), ib_at=1764669600.0 + 30), state=st)
    assert not only(fs, "ib.errors")
    assert st1["ib"]["ports"]["mlx5_0/1"]["counters"]["symbol_error"] == 10


def test_ib_saturated_counter_is_delta_unknown():
    sat = {"symbol_error": 0, "link_downed": 255}
    _unused, st = run(facts(hcas=_ib(sat, saturated=["link_downed"])))
    fs, _unused = run(facts(hcas=_ib(sat, saturated=["link_downed"]), ib_at=1764669600.0 + 3600), state=st)
    f = only(fs, "ib.link_flap", "mlx5_0/1", "link_downed")
    assert len(f) == 1 and f[0]["severity"] == "P2" and "delta unknown" in f[0]["message"]
    # without a previous reading too
    f = only(run(facts(hcas=_ib(sat, saturated=["link_downed"])))[0], "ib.link_flap")
    assert f[0]["evidence"]["saturated"] is True
    other = only(run(facts(hcas=_ib({"symbol_error": 65535}, saturated=["symbol_error"])))[0], "ib.errors")
    assert other[0]["severity"] == "P3" and "delta unknown" in other[0]["message"]


@pytest.mark.parametrize("downs, sev", [(1, "P2"), (5, "P1")])
def test_ib_link_flap_within_one_boot(downs, sev):
    _unused, st = run(facts(hcas=_ib({"link_downed": 2})))
    fs, _unused = run(facts(hcas=_ib({"link_downed": 2 + downs}), ib_at=1764669600.0 + 600), state=st)
    assert only(fs, "ib.link_flap", "mlx5_0/1", "link_downed")[0]["severity"] == sev
