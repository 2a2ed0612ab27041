# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpuops.cluster.slurm inventory plugin (docs/inventory-plugin.md), run as a user runs it:
``ansible-inventory -i x.slurm.yml --list`` in a subprocess, on captured ``scontrol show node`` output.

Expected hosts, groups and variables are read off the captures by hand (tests/fixtures/scontrol-show-node/, each
with its .source.txt); the 250-node file is written here from a pattern whose answers are counted by hand; the
topology lines follow Slurm's ``_print_topo_record`` (src/plugins/topology/tree/topology_tree.c:
``SwitchName=%s Level=%u LinkSpeed=%u`` + `` Nodes=`` / `` Switches=``) and topology.conf(5)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[4]
FIXTURES = REPO / "tests" / "fixtures" / "scontrol-show-node"
CSHUJI = FIXTURES / "cshuji-slurm-4nodes-gpu-m60-rtx2080-drain.txt"
YOKOTA = FIXTURES / "yokota-rtx6000ada-down-not-responding.txt"
CN = FIXTURES / "cn-docs-cpu-node-down-drain-not-responding.txt"


def _env():
    env = dict(os.environ)
    venv = REPO / ".venv" / "bin"
    env.update(
        {
            "PATH": "%s:%s" % (venv, env.get("PATH", "")),
            "ANSIBLE_COLLECTIONS_PATH": str(REPO / "build"),
            "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
            "ANSIBLE_INVENTORY_UNPARSED_FAILED": "True",
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_DEPRECATION_WARNINGS": "False",
        }
    )
    return env


def inventory(tmp_path, config, name="cluster.slurm.yml", expect_ok=True):
    """``ansible-inventory --list`` of a source file with ``config``: (hostvars, groups {name: sorted hosts}, proc)."""
    src = tmp_path / name
    src.write_text(config, encoding="utf-8")
    exe = REPO / ".venv" / "bin" / "ansible-inventory"
    proc = subprocess.run(
        [str(exe if exe.exists() else "ansible-inventory"), "-i", str(src), "--list", "--export"],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=str(tmp_path),
        timeout=120,
        check=False,
    )
    if not expect_ok:
        return None, None, proc
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    hostvars = {h: _plain(v) for h, v in data["_meta"]["hostvars"].items()}
    groups = {}

    def walk(group):
        members = set(data.get(group, {}).get("hosts", []))
        for child in data.get(group, {}).get("children", []):
            members |= walk(child)
        groups[group] = sorted(members)
        return members

    walk("all")
    return hostvars, groups, proc


def _plain(v):
    if isinstance(v, dict):
        if set(v) == {"__ansible_unsafe"}:
            return v["__ansible_unsafe"]
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def test_four_node_capture_hosts_groups_and_classes(tmp_path):
    hv, groups, proc = inventory(
        tmp_path,
        "plugin: gpuops.cluster.slurm\nscontrol_show_node_file: %s\nnode_classes:\n"
        "  - {class: m60-8, gres: 'gpu:m60:8'}\n  - {class: rtx2080-4, gres: 'gpu:rtx2080'}\n"
        "  - {class: cpu-oxygen, feature: oxygen}\n" % CSHUJI,
    )
    assert sorted(hv) == ["cortex-01", "cricket", "dumfries-002", "oxygen-04"]
    # NodeName / NodeAddr of the capture
    assert {h: v["gpuops_slurm_node_name"] for h, v in hv.items()} == {h: h for h in hv}
    assert hv["cortex-01"]["ansible_host"] == "cortex-01"
    assert hv["cortex-01"]["gpuops_node_class"] == "m60-8"
    assert hv["dumfries-002"]["gpuops_node_class"] == "rtx2080-4"
    assert hv["oxygen-04"]["gpuops_node_class"] == "cpu-oxygen"
    assert "gpuops_node_class" not in hv["cricket"]  # gpu:quadro:1 matches no rule
    assert hv["cricket"]["gpuops_slurm_partitions"] == ["short", "long", "debug", "other", "allowed", "deny"]
    assert hv["cricket"]["gpuops_slurm_features"] == ["cricket"]
    assert "gpuops_leaf_switch" not in hv["cricket"]  # no topology given
    # partitions (trailing space after Partitions= in the capture)
    assert groups["slurm_partition_short"] == ["cortex-01", "cricket", "dumfries-002", "oxygen-04"]
    assert groups["slurm_partition_killable"] == ["cortex-01", "dumfries-002", "oxygen-04"]
    assert groups["slurm_partition_deny"] == ["cricket"]
    # states: ALLOCATED, ALLOCATED, IDLE+DRAIN, IDLE
    assert groups["slurm_state_allocated"] == ["cortex-01", "dumfries-002"]
    assert groups["slurm_state_idle"] == ["cricket", "oxygen-04"]
    assert groups["slurm_state_drain"] == ["oxygen-04"]
    # GRES: gpu:m60:8, gpu:rtx2080:4, (null), gpu:quadro:1(S:0),vmem:2G
    assert groups["slurm_gres_gpu"] == ["cortex-01", "cricket", "dumfries-002"]
    assert groups["slurm_gres_gpu_m60"] == ["cortex-01"]
    assert groups["slurm_gres_gpu_quadro"] == ["cricket"]
    assert groups["slurm_gres_vmem"] == ["cricket"]
    assert groups["gpu_nodes"] == ["cortex-01", "cricket", "dumfries-002"]
    assert groups["slurm_feature_oxygen"] == ["oxygen-04"]
    assert groups["slurm_class_m60_8"] == ["cortex-01"]


def test_untyped_gres_down_not_responding_and_fqdn_address(tmp_path):
    hv, groups, _p = inventory(
        tmp_path,
        "plugin: gpuops.cluster.slurm\nscontrol_show_node_file: %s\nnode_classes:\n"
        "  - {class: rtx6000ada-8, gres: 'gpu:8'}\n" % YOKOTA,
    )
    assert list(hv) == ["rtx6000-ada"]
    assert hv["rtx6000-ada"]["ansible_host"] == "rtx6000-ada.yokota"  # NodeAddr differs from NodeName
    assert hv["rtx6000-ada"]["gpuops_node_class"] == "rtx6000ada-8"  # Gres=gpu:8(S:0-1)
    assert groups["slurm_state_down"] == ["rtx6000-ada"]
    assert groups["slurm_state_not_responding"] == ["rtx6000-ada"]
    assert groups["slurm_partition_rtx6000_ada"] == ["rtx6000-ada"]  # '-' sanitised
    assert groups["gpu_nodes"] == ["rtx6000-ada"]


def test_cpu_node_is_not_a_gpu_node_and_address_is_an_ip(tmp_path):
    hv, groups, _p = inventory(tmp_path, "plugin: gpuops.cluster.slurm\nscontrol_show_node_file: %s\n" % CN)
    assert hv["node1"]["ansible_host"] == "192.168.1.1"
    assert "gpu_nodes" not in groups or groups["gpu_nodes"] == []
    assert groups["slurm_state_down"] == ["node1"] and groups["slurm_state_drain"] == ["node1"]
    assert groups["slurm_partition_batch"] == ["node1"]


def _write_250(path):
    """250 nodes gpu001..gpu250 (NodeAddr 10.1.<rack>.<n>), partition gpu (+ debug for gpu001-gpu010),
    Gres gpu:h100:8 except gpu241-gpu250 (gpu:a100:8, feature a100); gpu013 and gpu200 IDLE+DRAIN."""
    lines = []
    for i in range(1, 251):
        name = "gpu%03d" % i
        model = "a100" if i > 240 else "h100"
        state = "IDLE+DRAIN" if i in (13, 200) else "IDLE"
        parts = "gpu,debug" if i <= 10 else "gpu"
        lines += [
            "NodeName=%s Arch=x86_64 CoresPerSocket=56" % name,
            "   CPUAlloc=0 CPUEfctv=224 CPUTot=224 CPULoad=0.10",
            "   AvailableFeatures=%s,ib" % model,
            "   ActiveFeatures=%s,ib" % model,
            "   Gres=gpu:%s:8(S:0-1)" % model,
            "   NodeAddr=10.1.%d.%d NodeHostName=%s Version=23.11.4" % ((i - 1) // 25 + 1, (i - 1) % 25 + 11, name),
            "   State=%s ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A" % state,
            "   Partitions=%s" % parts,
        ]
        if state.endswith("DRAIN"):
            lines.append("   Reason=gpuops: gpu.xid 79 [root@2026-12-01T10:00:00]")
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")


TOPOLOGY = """# leaf switches of 25 nodes each, two spines
SwitchName=leaf01 Nodes=gpu[001-025]
SwitchName=leaf02 Nodes=gpu[026-050]
SwitchName=leaf03 Nodes=gpu[051-075]
SwitchName=leaf04 Nodes=gpu[076-100]
SwitchName=leaf05 Nodes=gpu[101-125]
SwitchName=leaf06 Nodes=gpu[126-150]
SwitchName=leaf07 Nodes=gpu[151-175]
SwitchName=leaf08 Nodes=gpu[176-200]
SwitchName=leaf09 Nodes=gpu[201-225]
SwitchName=leaf10 Nodes=gpu[226-250]
SwitchName=spine1 Switches=leaf[01-05]
SwitchName=spine2 Switches=leaf[06-10] \\
  LinkSpeed=1
"""


def test_250_nodes_with_topology_conf(tmp_path):
    _write_250(tmp_path / "nodes.txt")
    (tmp_path / "topology.conf").write_text(TOPOLOGY, encoding="utf-8")
    hv, groups, _p = inventory(
        tmp_path,
        "plugin: gpuops.cluster.slurm\nscontrol_show_node_file: nodes.txt\ntopology_file: topology.conf\n"
        "node_classes:\n  - {class: h100-sxm-8, gres: 'gpu:h100:8'}\n  - {class: a100-sxm-8, feature: a100}\n",
    )
    assert len(hv) == 250
    assert len(groups["slurm_partition_gpu"]) == 250
    assert groups["slurm_partition_debug"] == ["gpu%03d" % i for i in range(1, 11)]
    assert groups["slurm_state_drain"] == ["gpu013", "gpu200"]
    assert len(groups["slurm_state_idle"]) == 250
    assert groups["slurm_gres_gpu_a100"] == ["gpu%03d" % i for i in range(241, 251)]
    assert len(groups["slurm_class_h100_sxm_8"]) == 240
    assert len(groups["gpu_nodes"]) == 250
    assert hv["gpu137"]["gpuops_leaf_switch"] == "leaf06"
    assert hv["gpu137"]["gpuops_rack"] == "leaf06"
    assert hv["gpu137"]["ansible_host"] == "10.1.6.22"
    assert hv["gpu250"]["gpuops_leaf_switch"] == "leaf10"
    assert hv["gpu250"]["gpuops_node_class"] == "a100-sxm-8"
    assert hv["gpu001"]["gpuops_leaf_switch"] == "leaf01"
    assert hv["gpu025"]["gpuops_leaf_switch"] == "leaf01" and hv["gpu026"]["gpuops_leaf_switch"] == "leaf02"
    assert groups["slurm_feature_ib"] == sorted(hv)


def test_scontrol_show_topology_output_picks_the_lowest_level(tmp_path):
    _write_250(tmp_path / "nodes.txt")
    (tmp_path / "topo.txt").write_text(
        "SwitchName=s0 Level=0 LinkSpeed=1 Nodes=gpu[001-125]\n"
        "SwitchName=s1 Level=0 LinkSpeed=1 Nodes=gpu[126-250]\n"
        "SwitchName=s2 Level=1 LinkSpeed=1 Nodes=gpu[001-250] Switches=s[0-1]\n",
        encoding="utf-8",
    )
    hv, _g, _p = inventory(
        tmp_path,
        "plugin: gpuops.cluster.slurm\nscontrol_show_node_file: nodes.txt\ntopology_file: topo.txt\nrack_from_leaf: false\n",
    )
    assert hv["gpu125"]["gpuops_leaf_switch"] == "s0"
    assert hv["gpu126"]["gpuops_leaf_switch"] == "s1"
    assert "gpuops_rack" not in hv["gpu126"]


def test_block_topology_is_the_rack(tmp_path):
    _write_250(tmp_path / "nodes.txt")
    (tmp_path / "topo.txt").write_text(
        "BlockName=nvl01 BlockIndex=0 Nodes=gpu[001-018]\nBlockName=nvl02 BlockIndex=1 Nodes=gpu[019-036]\n",
        encoding="utf-8",
    )
    hv, _g, _p = inventory(
        tmp_path, "plugin: gpuops.cluster.slurm\nscontrol_show_node_file: nodes.txt\ntopology_file: topo.txt\n"
    )
    assert hv["gpu018"]["gpuops_rack"] == "nvl01" and hv["gpu019"]["gpuops_rack"] == "nvl02"
    assert "gpuops_rack" not in hv["gpu037"] and "gpuops_leaf_switch" not in hv["gpu001"]


def test_inventory_name_differs_from_slurm_name_and_compose_overrides(tmp_path):
    (tmp_path / "racks.csv").write_text("gpu001.example.org,r-a\ngpu002.example.org,r-b\n", encoding="utf-8")
    _write_250(tmp_path / "nodes.txt")
    (tmp_path / "topology.conf").write_text(TOPOLOGY, encoding="utf-8")
    hv, groups, _p = inventory(
        tmp_path,
        "plugin: gpuops.cluster.slurm\nscontrol_show_node_file: nodes.txt\ntopology_file: topology.conf\n"
        "hostname_suffix: .example.org\npartitions: [debug]\n"
        "compose:\n  gpuops_rack: lookup('ansible.builtin.csvfile', inventory_hostname, file='racks.csv',"
        " delimiter=',', col='1', default=gpuops_rack)\n"
        "keyed_groups:\n  - {key: gpuops_rack, prefix: rack}\n",
    )
    assert sorted(hv) == ["gpu%03d.example.org" % i for i in range(1, 11)]
    assert hv["gpu001.example.org"]["gpuops_slurm_node_name"] == "gpu001"
    assert hv["gpu001.example.org"]["gpuops_rack"] == "r-a"
    assert hv["gpu002.example.org"]["gpuops_rack"] == "r-b"
    assert hv["gpu003.example.org"]["gpuops_rack"] == "leaf01"  # not in the CSV: Slurm's topology
    assert groups["rack_r_a"] == ["gpu001.example.org"]


def test_json_form(tmp_path):
    # the field names of scontrol show node --json (Slurm 22.05 openapi v0.0.38 node; 23.11+ makes state and
    # features lists): hand-written to that shape
    doc = {
        "meta": {"plugin": {"type": "openapi/v0.0.38"}},
        "nodes": [
            {
                "name": "dgx-a01",
                "address": "10.0.0.1",
                "hostname": "dgx-a01",
                "state": "idle",
                "state_flags": ["DRAIN"],
                "features": "dgx,h100",
                "active_features": "dgx,h100",
                "gres": "gpu:h100:8(S:0-1)",
                "partitions": ["gpu"],
                "reason": "bad fan",
            },
            {
                "name": "dgx-a02",
                "address": "10.0.0.2",
                "hostname": "dgx-a02",
                "state": ["MIXED"],
                "features": ["dgx", "h100"],
                "gres": "gpu:h100:8",
                "partitions": ["gpu", "long"],
            },
        ],
    }
    (tmp_path / "nodes.json").write_text(json.dumps(doc), encoding="utf-8")
    hv, groups, _p = inventory(
        tmp_path,
        "plugin: gpuops.cluster.slurm\nscontrol_show_node_file: nodes.json\n"
        "node_classes: [{class: dgx-h100, feature: dgx, gres: 'gpu:h100:8'}]\n",
    )
    assert hv["dgx-a01"]["ansible_host"] == "10.0.0.1"
    assert hv["dgx-a02"]["gpuops_node_class"] == "dgx-h100"
    assert groups["slurm_state_drain"] == ["dgx-a01"]
    assert groups["slurm_state_mixed"] == ["dgx-a02"]
    assert groups["slurm_partition_long"] == ["dgx-a02"]
    assert groups["slurm_feature_h100"] == ["dgx-a01", "dgx-a02"]


def test_hostile_names_are_data_not_hosts(tmp_path):
    (tmp_path / "n.txt").write_text(
        "NodeName={{lookup('pipe','id')}} State=IDLE Partitions=gpu Gres=gpu:h100:8\n\n"
        "NodeName=good-01 State=IDLE Partitions={{x}},gpu NodeAddr=$(reboot) AvailableFeatures=a;b\n",
        encoding="utf-8",
    )
    hv, groups, proc = inventory(tmp_path, "plugin: gpuops.cluster.slurm\nscontrol_show_node_file: n.txt\n")
    assert list(hv) == ["good-01"]
    assert "ansible_host" not in hv["good-01"]
    assert "not a plain Slurm node name" in proc.stderr
    assert groups["slurm_partition_x"] == ["good-01"] and groups["slurm_feature_a_b"] == ["good-01"]


@pytest.mark.parametrize(
    "content, said",
    [
        ("", "empty"),
        ("slurm_load_node error: Unable to contact slurm controller (connect failure)\n", "no NodeName= record"),
        ('{"nodes": ', "not valid JSON"),
        ('{"meta": {}}', "no 'nodes' list"),
        ("SwitchName=leaf01 Nodes=gpu[001-025]\n", "no NodeName= record"),
    ],
)
def test_bad_files_are_a_clear_error(tmp_path, content, said):
    (tmp_path / "bad.txt").write_text(content, encoding="utf-8")
    _h, _g, proc = inventory(
        tmp_path, "plugin: gpuops.cluster.slurm\nscontrol_show_node_file: bad.txt\n", expect_ok=False
    )
    assert proc.returncode != 0
    assert "gpuops.cluster.slurm" in proc.stderr and said in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_file_and_bad_topology(tmp_path):
    _h, _g, proc = inventory(
        tmp_path, "plugin: gpuops.cluster.slurm\nscontrol_show_node_file: nope.txt\n", expect_ok=False
    )
    assert proc.returncode != 0 and "cannot read" in proc.stderr and "nope.txt" in proc.stderr
    (tmp_path / "t.conf").write_text("SwitchName={{x}} Nodes=node1\n", encoding="utf-8")
    _h, _g, proc = inventory(
        tmp_path,
        "plugin: gpuops.cluster.slurm\nscontrol_show_node_file: %s\ntopology_file: t.conf\n" % CN,
        expect_ok=False,
    )
    assert proc.returncode != 0 and "bad switch name" in proc.stderr and "Traceback" not in proc.stderr


def test_only_slurm_yml_sources(tmp_path):
    _h, _g, proc = inventory(
        tmp_path, "plugin: gpuops.cluster.slurm\nscontrol_show_node_file: %s\n" % CN, name="x.yml", expect_ok=False
    )
    assert proc.returncode != 0


def test_live_scontrol_and_cache(tmp_path):
    """Live through a fake Slurm client (prints the capture, logs each call); the second run comes from the cache."""
    log = tmp_path / "calls.log"
    fake = tmp_path / "scontrol"
    fake.write_text(
        "#!/bin/sh\necho \"$*\" >> '%s'\ncase \"$*\" in\n  'show node') cat '%s' ;;\n"
        "  'show topology') echo 'SwitchName=leafX Level=0 LinkSpeed=1 Nodes=cortex-01,cricket' ;;\n"
        "  *) exit 1 ;;\nesac\n" % (log, CSHUJI),
        encoding="utf-8",
    )
    fake.chmod(0o755)
    config = (
        "plugin: gpuops.cluster.slurm\nscontrol_path: %s\ncache: true\ncache_plugin: ansible.builtin.jsonfile\n"
        "cache_connection: %s\ncache_timeout: 600\n" % (fake, tmp_path / "cache")
    )
    hv, _g, _p = inventory(tmp_path, config)
    assert hv["cricket"]["gpuops_leaf_switch"] == "leafX" and "gpuops_leaf_switch" not in hv["oxygen-04"]
    assert log.read_text().split("\n")[:2] == ["show node", "show topology"]
    hv2, _g, _p = inventory(tmp_path, config)
    assert hv2 == hv
    assert log.read_text().count("show node") == 1  # served from the cache


def test_parse_gres_pure():
    sys.path.insert(0, str(REPO / "build"))
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.inventory import slurm_nodes

    assert slurm_nodes.parse_gres("gpu:quadro:1(S:0),vmem:2G") == [
        {"name": "gpu", "type": "quadro", "count": "1"},
        {"name": "vmem", "type": None, "count": "2G"},
    ]
    assert slurm_nodes.parse_gres("gpu:a100:2(IDX:0,3)") == [{"name": "gpu", "type": "a100", "count": "2"}]
    assert slurm_nodes.group_name("slurm_state_", "NOT_RESPONDING") == "slurm_state_not_responding"
    assert slurm_nodes.group_name("", "9lives") == "_9lives"
    assert slurm_nodes.group_name("", "***") is None


@pytest.mark.parametrize(
    "nodes, said",
    [
        ("gpu[1-10/2]", "bad range"),  # ClusterShell's step: not Slurm output (cluster-formats.md 1.5)
        ("gpu[10-1]", "reversed range"),
        ("gpu[01-03", "'[' without ']'"),
        ("bgl[123x456]", "bad range"),  # the legacy 3-D box
    ],
)
def test_topology_host_lists_slurm_never_prints_are_refused_with_the_line(nodes, said):
    from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.inventory import topology

    text = "SwitchName=leaf01 Nodes=gpu[01-02]\nSwitchName=leaf02 Nodes=%s\n" % nodes
    with pytest.raises(ParseError) as err:
        topology.parse_topology(text, "topology.conf")
    assert said in str(err.value) and err.value.line == 2 and "topology.conf" in str(err.value)
    # the forms Slurm prints still read (cluster-formats.md 1.5: width = len(lo), several ranges)
    (rec,) = topology.parse_topology("SwitchName=leaf01 Nodes=c[020-022],f[8-10]\n")
    assert rec["nodes"] == ["c020", "c021", "c022", "f8", "f9", "f10"]


def test_bad_topology_host_list_is_a_clear_inventory_error(tmp_path):
    (tmp_path / "t.conf").write_text("SwitchName=leaf01 Nodes=node[1-10/2]\n", encoding="utf-8")
    _h, _g, proc = inventory(
        tmp_path,
        "plugin: gpuops.cluster.slurm\nscontrol_show_node_file: %s\ntopology_file: t.conf\n" % CN,
        expect_ok=False,
    )
    assert proc.returncode != 0 and "node[1-10/2]" in proc.stderr and "Traceback" not in proc.stderr
