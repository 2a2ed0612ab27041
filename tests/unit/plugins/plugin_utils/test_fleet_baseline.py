# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The zero-config baseline (issue 20): expectations inferred from peers where no profile sets them.

Within a node on real ibstat captures (gpud's test data: 8 ConnectX-7 + 4 ConnectX-6 Dx, some ports down), and
across a fleet on simulated clusters generated with and without profiles (the answer key of
``generate.py --no-profiles`` is written from the faults, not from this code).
"""

from __future__ import annotations

import datetime
import os
import stat
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import collect as _collect
from ansible_collections.gpuops.cluster.plugins.plugin_utils import checks as C
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import fleet as _fleet
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import pipeline as _inspect
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy as P
from sim_inventory import gpu_nodes

REPO = Path(__file__).resolve().parents[4]
IBSTAT = REPO / "tests" / "fixtures" / "ibstat"
NOW = "2026-11-20T12:00:00Z"


def ib_capture(tmp_path: Path, text: str) -> dict:
    d = tmp_path / "cap"
    d.mkdir(exist_ok=True)
    (d / "ibstat.txt").write_text(text)
    return _collect.collect_all(capture_dir=str(d))


def findings(facts, profile=None, policy=None, fleet=None, host="n1"):
    found, _state = C.evaluate_node(facts, profile, policy or P.DEFAULT_POLICY, {}, NOW, host, fleet)
    return found


def by_check(found, check):
    return {f["component"]: f for f in found if f["check"] == check}


# ------------------------------------------------------------------------------------------- within a node


def test_roce_ports_down_among_active_peers_are_faults(tmp_path):
    """gpud roce-some-down: 6 of 8 MT4129 RoCE ports Active at 400, mlx5_5 and mlx5_11 Down/Disabled."""
    facts = ib_capture(tmp_path, (IBSTAT / "gpud-h100-cx7-roce-some-down.txt").read_text())
    ports = by_check(findings(facts), "ib.port_state")
    assert set(ports) == {"mlx5_5/1", "mlx5_11/1"}
    f = ports["mlx5_11/1"]
    assert (f["severity"], f["action"], f["code"]) == ("P1", "reseat", "DOWN")
    assert f["evidence"]["baseline"]["agree"] == 6 and f["evidence"]["baseline"]["of"] == 8
    assert f["evidence"]["baseline"]["source"] == "node_peers"
    assert "confidence 75%" in f["message"] and "MT4129" in f["message"]


def test_polling_port_is_found_whatever_the_link_layer(tmp_path):
    """The same node with one port Down/Polling (cable or peer): found; the 100G MT4125 ports judge nothing."""
    text = (IBSTAT / "gpud-h100-cx7-roce-some-down.txt").read_text()
    blocks = text.split("CA '")
    out = []
    for b in blocks:
        if b.startswith("mlx5_11'"):
            b = b.replace("Physical state: Disabled", "Physical state: Polling")
        elif b.startswith("mlx5_5'"):
            b = b.replace("State: Down", "State: Active").replace("Physical state: Disabled", "Physical state: LinkUp")
            b = b.replace("Rate: 40\n", "Rate: 400\n")
        out.append(b)
    facts = ib_capture(tmp_path, "CA '".join(out))
    ports = by_check(findings(facts), "ib.port_state")
    assert list(ports) == ["mlx5_11/1"]
    assert ports["mlx5_11/1"]["evidence"]["phys_state"] == "Polling"
    assert ports["mlx5_11/1"]["evidence"]["baseline"]["agree"] == 7


def test_unused_second_nic_ports_are_not_faults(tmp_path):
    """gpud ib-some-down: 3 of 4 ConnectX-6 Dx Ethernet ports Down/Disabled (unused), all 8 IB ports Active."""
    facts = ib_capture(tmp_path, (IBSTAT / "gpud-h100-cx7-ib-some-down.txt").read_text())
    found = findings(facts)
    assert by_check(found, "ib.port_state") == {}
    assert [f for f in found if f["severity"] in ("P0", "P1", "P2")] == []


@pytest.mark.parametrize(
    "name",
    ["gpud-h100-cx7-roce-all-active.txt", "gpud-h100-cx7-ib-all-active-bf3.txt", "gpud-a100-cx6-ib-hdr-all-active.txt"],
)
def test_all_active_captures_raise_nothing(tmp_path, name):
    facts = ib_capture(tmp_path, (IBSTAT / name).read_text())
    assert [f for f in findings(facts) if f["severity"] != "P3"] == []


def test_downtrained_port_among_peers(tmp_path):
    text = (IBSTAT / "gpud-h100-cx7-roce-all-active.txt").read_text()
    i = text.index("CA 'mlx5_3'")
    j = text.index("Rate: 400", i)
    facts = ib_capture(tmp_path, text[:j] + "Rate: 200" + text[j + len("Rate: 400") :])
    rates = by_check(findings(facts), "ib.port_rate")
    assert list(rates) == ["mlx5_3/1"]
    assert rates["mlx5_3/1"]["severity"] == "P2"
    assert rates["mlx5_3/1"]["evidence"]["baseline"]["expected_rate_gbps"] == 400


def test_the_profile_wins(tmp_path):
    """A profile that lists the ports to expect switches the peer inference off (mlx5_5 is not expected)."""
    facts = ib_capture(tmp_path, (IBSTAT / "gpud-h100-cx7-roce-some-down.txt").read_text())
    expected = ["mlx5_%d/1" % i for i in (0, 3, 4, 6, 9, 10, 11)]
    ports = by_check(findings(facts, {"ib_ports": expected, "ib_link_layer": "Ethernet"}), "ib.port_state")
    assert set(ports) == {"mlx5_11/1"}
    assert "baseline" not in ports["mlx5_11/1"]["evidence"]


def test_inference_thresholds_are_policy(tmp_path):
    facts = ib_capture(tmp_path, (IBSTAT / "gpud-h100-cx7-roce-some-down.txt").read_text())
    strict = P.merge_policy(P.DEFAULT_POLICY, {"fleet_baseline": {"min_share": 0.8}})
    assert by_check(findings(facts, policy=strict), "ib.port_state") == {}  # 6 of 8 = 75 % < 80 %
    off = P.merge_policy(P.DEFAULT_POLICY, {"fleet_baseline": {"enabled": False}})
    assert by_check(findings(facts, policy=off), "ib.port_state") == {}


sys.path.insert(0, str(REPO / "tools"))
from simcluster import generate as G  # noqa: E402
from simcluster import score  # noqa: E402
from simnode.capture import capture  # noqa: E402
from simnode.state import default_state  # noqa: E402


def node_facts(tmp_path: Path, change) -> dict:
    """A simulated 8-GPU H100 node, changed by ``change(state)``, captured in the real tools' formats and read
    back through the collectors."""
    state = default_state("n1", seed=7, now=1763640000.0)
    change(state)
    capture(state, str(tmp_path / "n1"))
    return _collect.collect_all(capture_dir=str(tmp_path / "n1"))


def test_gpu_whose_nvlinks_are_all_down_while_siblings_are_up(tmp_path):
    def all_down(state):
        for lk in state["gpus"][3]["nvlinks"]:
            lk["up"] = False

    facts = node_facts(tmp_path, all_down)
    nv = by_check(findings(facts), "gpu.nvlink")
    assert list(nv) == ["gpu3"]
    assert nv["gpu3"]["code"] == "all_down" and nv["gpu3"]["severity"] == "P1"
    assert nv["gpu3"]["evidence"]["baseline"]["agree"] == 7
    # with a profile its own check reports the GPU against nvlinks_per_gpu instead
    nv = by_check(findings(facts, {"nvlinks_per_gpu": 18}), "gpu.nvlink")
    assert list(nv) == ["gpu3"] and nv["gpu3"]["code"] == "missing" and "baseline" not in nv["gpu3"]["evidence"]


def test_every_gpu_down_is_not_a_peer_fault(tmp_path):
    def every(state):
        for g in state["gpus"]:
            for lk in g["nvlinks"]:
                lk["up"] = False

    nv = by_check(findings(node_facts(tmp_path, every)), "gpu.nvlink")
    assert not [f for f in nv.values() if f["code"] == "all_down"]
    # an HGX board whose every GPU says "all links are inactive" is still a fault (issue 20, _checks/partial.py)
    assert {f["code"] for f in nv.values()} == {"all_inactive"} and len(nv) == 8


def test_gpu_on_a_narrower_pcie_link_than_its_siblings(tmp_path):
    def narrow(state):
        state["gpus"][5]["pcie"]["width_cur"] = 8

    facts = node_facts(tmp_path, narrow)
    pcie = by_check(findings(facts), "gpu.pcie")
    assert list(pcie) == ["gpu5"] and pcie["gpu5"]["code"] == "width"
    assert pcie["gpu5"]["evidence"]["baseline"]["usual_width"] == 16
    assert by_check(findings(facts, {"pcie_width": 8}), "gpu.pcie") == {}


# ------------------------------------------------------------------------------------------ across a fleet


def _hosts(sim: Path):
    own, gv, _every = gpu_nodes(sim)
    hosts = {}
    for h, v in own.items():
        hosts[h] = {
            "capture_dir": v["gpuops_capture_dir"],
            "previous_capture_dir": v.get("gpuops_previous_capture_dir"),
            "node_class": v.get("gpuops_node_class"),
        }
    return hosts, gv.get("gpuops_profiles") or {}


def _score(report, key):
    result = score.score(report, key)
    return result["missing"], result["false_alarms"]


WHEN = datetime.datetime(2026, 11, 20, 12, 0, tzinfo=datetime.timezone.utc)
FAULTS = (
    "gpu_missing,driver_drift,ib_port_polling,missing_mount,persistenced_down,fabric_manager_down,pcie_width_drop,"
    "nvlink_gpu_down,ib_rate_drop,dead_leaf"
)


@pytest.fixture(scope="module")
def zero(tmp_path_factory):
    sim = tmp_path_factory.mktemp("zero") / "sim"
    key = G.generate(40, str(sim), 11, FAULTS, profiles=False)
    hosts, profiles = _hosts(sim)
    assert profiles == {} and all(h["node_class"] is None for h in hosts.values())
    return sim, key, hosts, _inspect.inspect_nodes(hosts, profiles, now=WHEN)


def test_zero_profile_cluster_matches_its_answer_key(zero):
    _sim, key, _hosts_, report = zero
    assert key["profiles"] is False
    missing, unkeyed = _score(report, key)
    assert missing == [] and unkeyed == []
    assert all(n["baseline"] == "fleet" for n in report["nodes"].values())
    fb = report["fleet_baseline"]["NVIDIA H100 80GB HBM3"]
    assert fb["gpu_count"]["value"] == 8 and fb["gpu_count"]["of"] == 40
    assert 0.9 <= fb["gpu_count"]["confidence"] < 1.0


def test_fleet_findings_state_their_confidence(zero):
    _sim, key, _hosts_, report = zero
    host = next(h for h, fs in key["faults_by_host"].items() if fs == ["gpu_missing"])
    f = next(f for f in report["nodes"][host]["findings"] if f["check"] == "gpu.missing")
    assert f["severity"] == "P1" and f["evidence"]["baseline"]["source"] == "fleet"
    assert f["evidence"]["baseline"]["agree"] == 39 and "39 of 40" in f["message"]
    drift = next(h for h, fs in key["faults_by_host"].items() if fs == ["driver_drift"])
    skew = [f for f in report["nodes"][drift]["findings"] if f["code"] == "fleet_driver_version"]
    assert skew and skew[0]["severity"] == "P3" and skew[0]["check"] == "gpu.drift"


def test_written_profiles_are_valid_and_find_the_same_faults(zero, tmp_path):
    _sim, key, hosts, report = zero
    text = _fleet.profiles_yaml(report["fleet_baseline"], report["generated_at"])
    profiles = yaml.safe_load(text)["gpuops_profiles"]
    assert list(profiles) == ["nvidia-h100-80gb-hbm3-8"]
    prof = profiles["nvidia-h100-80gb-hbm3-8"]
    P.validate_profile(prof, "inferred")
    assert prof["gpu_count"] == 8 and prof["nvlinks_per_gpu"] == 18 and len(prof["ib_ports"]) == 8
    assert prof["ib_rate_gbps"] == 400 and prof["nvswitch"] is True and "/home" in prof["mounts"]
    assert "# 39 of 40 nodes agree (98%)" in text
    # the operator commits it and gives the hosts their class: the profile is used instead of the inference
    classed = {h: dict(v, node_class="nvidia-h100-80gb-hbm3-8") for h, v in hosts.items()}
    with_profile = _inspect.inspect_nodes(classed, profiles, now=WHEN)
    assert all(n["baseline"] == "profile" for n in with_profile["nodes"].values())
    assert with_profile["fleet_baseline"] == {}
    drift = next(h for h, fs in key["faults_by_host"].items() if fs == ["driver_drift"])
    got = {(f["check"], f["code"]) for f in with_profile["nodes"][drift]["findings"]}
    assert ("gpu.driver", "version") in got  # the profile's own check now reports it


def test_too_few_peers_infer_nothing(tmp_path):
    sim = tmp_path / "sim"
    G.generate(3, str(sim), 11, "gpu_missing", profiles=False)
    hosts, profiles = _hosts(sim)
    report = _inspect.inspect_nodes(hosts, profiles, now=WHEN)
    assert report["fleet_baseline"] == {}
    assert all(n["baseline"] == "none" for n in report["nodes"].values())
    assert not any(f["check"] == "gpu.missing" for n in report["nodes"].values() for f in n["findings"])


def test_majority_needs_voters_and_share():
    cfg = {"min_peers": 4, "min_share": 0.75}
    assert _fleet.majority([8, 8, 8, 7], cfg)["value"] == 8
    assert "value" not in _fleet.majority([8, 8, 7, 7], cfg)
    assert "value" not in _fleet.majority([8, 8, 8], cfg)
    assert _fleet.majority([True] * 3, cfg, voters=4) == {"agree": 3, "of": 4, "confidence": 0.75, "value": True}
    assert _fleet.majority([], cfg) == {"agree": 0, "of": 0, "confidence": 0.0}


@pytest.mark.skipif(
    not shutil.which("ansible-playbook") and not (REPO / ".venv/bin/ansible-playbook").exists(), reason="no ansible"
)
def test_generate_cli_no_profiles(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "tools/simcluster/generate.py"),
            "--nodes",
            "4",
            "--out",
            str(tmp_path / "s"),
            "--no-profiles",
            "--faults",
            "none",
            "--jobs",
            "1",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    key = json.loads((tmp_path / "s" / "answer_key.json").read_text())
    assert key["profiles"] is False and key["node_class"] is None
    assert "gpuops_node_class" not in (tmp_path / "s" / "inventory" / "hosts.yml").read_text()


def test_inspect_cluster_writes_the_profiles_privately_and_not_in_check_mode(zero, tmp_path, run_action):
    from ansible_collections.gpuops.cluster.plugins.action import inspect_cluster

    _sim, _key, hosts, _report = zero
    hv = {h: {"inventory_hostname": h, "gpuops_capture_dir": v["capture_dir"]} for h, v in hosts.items()}
    out = tmp_path / "profiles.yml"
    args = {
        "targets": sorted(hv),
        "report_dir": str(tmp_path / "r"),
        "write_profiles": str(out),
        "include_facts": False,
    }
    res = run_action(inspect_cluster, args, check_mode=True, task_vars={"hostvars": hv})
    assert not out.exists() and "profiles_written" not in res
    res = run_action(inspect_cluster, args, task_vars={"hostvars": hv})
    assert res["profiles_written"] == {"path": str(out), "classes": ["NVIDIA H100 80GB HBM3"]}
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    assert "nvidia-h100-80gb-hbm3-8" in yaml.safe_load(out.read_text())["gpuops_profiles"]
    assert "compared with their peers" in " ".join(res.get("warnings", []))
    md = (tmp_path / "r" / "report.md").read_text()
    assert "## Fleet baseline (zero-config)" in md and "| NVIDIA H100 80GB HBM3 | 40 | 8 (39/40) |" in md
    # a path that cannot be written is a clear failure, not a traceback
    res = run_action(
        inspect_cluster,
        dict(args, write_profiles=str(tmp_path / "r" / "report.md" / "p.yml")),
        task_vars={"hostvars": hv},
    )
    assert res["failed"] and res["msg"].startswith("inspect_cluster: cannot write the inferred profiles"), res


def test_score_tool_counts_missing_and_false_alarms(zero, tmp_path):
    _sim, key, _hosts_, report = zero
    s = score.score(report, key)
    assert s["found"] == s["expected"] > 0 and s["false_alarms"] == [] and s["missing"] == []
    host = next(h for h, v in key["hosts"].items() if v)
    broken = json.loads(json.dumps(report, default=str))
    broken["nodes"][host]["findings"] = [dict(check="gpu.ecc", component="gpu0", severity="P1")]
    s = score.score(broken, key)
    assert s["found"] == s["expected"] - len(key["hosts"][host]) and s["false_alarms"] == [
        (host, "gpu.ecc", "gpu0", "P1")
    ]
    assert score.line(s).startswith(
        "score: found %d/%d expected findings, 1 false alarms" % (s["found"], s["expected"])
    )
