# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 37: every storage form and quirk of ../shared/reference/cluster-formats.md sections 5-7, on the text shown
there (tests/fixtures/storage/ref5*, ref6*, ref7*, each with its .source.txt), and the grading of each state by
the storage's own meaning (thresholds.storage.states). Expected values are read off the reference's text."""

from __future__ import annotations

import copy
import os
import shutil

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.storage import collect_storage
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import storage as sp
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import storage_gpfs as sg
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import DEFAULT_POLICY, PolicyError, merge_policy
from ansible_collections.gpuops.cluster.plugins.plugin_utils.platform.storage import check_storage

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "storage")
NOW = "2026-12-03T09:00:00Z"


def fx(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as fh:
        return fh.read()


def graded(tmp_path, files):
    """{(component, code): (severity, action)} of the storage findings of a capture holding ``files``."""
    for name, content in files.items():
        (tmp_path / name).write_text(content)
    facts = collect_storage(capture_dir=str(tmp_path))
    return facts, {(f["component"], f["code"]): (f["severity"], f["action"]) for f in check_storage(facts, None, NOW)}


# --- 5.1 lfs df --------------------------------------------------------------------------------------------------


def test_5_1_lfs_df_hv_flags_inactive_placeholder_and_the_ost_left_out():
    (fs,) = sp.parse_lfs_df(fx("ref51-lfs-df-hv-flags-inactive.txt"))
    by = {t["name"]: t for t in fs["targets"]}
    assert (fs["name"], fs["mount"], fs["mode"]) == ("testfs", "/testfs", "bytes")
    assert by["testfs-OST0001"]["flags"] == ["degraded"] and by["testfs-OST0001"]["used_pct"] == 87
    assert by["testfs-OST0002"]["flags"] == ["degraded", "read_only"]
    assert by["testfs-OST0003"]["state"] == "inactive" and by["testfs-OST0003"]["index"] == 3  # "OST0003": hex
    assert by["testfs-OST0000"]["state"] == "missing"  # no line for index 0: hidden (>= 2.10) or skipped
    assert fs["summary"]["used_pct"] == 88


def test_5_1_pre_2_10_summary_spelling_and_the_eagain_line():
    (fs,) = sp.parse_lfs_df(fx("ref51-lfs-df-pre210-eagain.txt"))  # shown without its header line
    assert fs["summary"]["used_pct"] == 5 and fs["mount"] == "/lustre/pfs/client"
    by = {t["name"]: t for t in fs["targets"]}
    assert by["pfs-OST0001"]["state"] == "unavailable" and by["pfs-OST0001"]["detail"].startswith("Resource")
    assert by["pfs-OST0000"]["used_pct"] == 5 and by["pfs-OST0000"]["total"] == int(1021.9 * 1024**2)


@pytest.mark.parametrize("spelling", ["filesystem_summary:", "filesystem summary:"])
def test_5_1_both_summary_spellings(spelling):
    text = fx("lustre-manual-lfs-df-h.txt").replace("filesystem summary:", spelling)
    (fs,) = sp.parse_lfs_df(text)
    assert fs["summary"]["used_pct"] == 59


def test_5_1_strerror_line_hex_placeholder_and_decimal_index():
    text = (
        "UUID                   1K-blocks        Used   Available Use% Mounted on\n"
        "fs-OST0009_UUID       1000  500  500  50% /fs[OST:9]\n"
        "fs-OST000a_UUID: Input/output error\n"
        "filesystem_summary:   1000  500  500  50% /fs\n"
    )
    (fs,) = sp.parse_lfs_df(text, errors=[])
    by = {t["name"]: t for t in fs["targets"]}
    assert by["fs-OST000a"]["index"] == 10 and by["fs-OST000a"]["state"] == "error"
    assert by["fs-OST000a"]["detail"] == "Input/output error"
    assert len([t for t in fs["targets"] if t["state"] == "missing"]) == 9  # indices 0..8 not listed


def test_5_1_h_and_H_units_and_headerless_listing():
    row = "fs-OST0000_UUID  2.0T  1.0T  1.0T  50% /fs[OST:0]\nfilesystem_summary:  2.0T  1.0T  1.0T  50% /fs\n"
    (fs,) = sp.parse_lfs_df("UUID bytes Used Available Use% Mounted on\n" + row)
    assert fs["targets"][0]["total"] == 2 * 1024**4  # -h: powers of 1024
    (fs,) = sp.parse_lfs_df(row)  # -N: no header; human units say bytes
    assert fs["mode"] == "bytes" and fs["targets"][0]["used_pct"] == 50
    (fs,) = sp.parse_lfs_df(row.replace("2.0T", "900.0k"))  # -H: base 1000
    assert fs["targets"][0]["total"] == 900000
    (fs,) = sp.parse_lfs_df("fs-MDT0000_UUID 100 90 10 90% /fs[MDT:0]\n", errors=[], mode="inodes")
    assert fs["mode"] == "inodes"  # lfs df -i -N: the caller (file lfs-df-i.txt) knows


def test_5_1_octal_flags_tool_stderr_and_prompt_lines():
    text = (
        "[root@login1 ~]# lfs df -v /fs\n"
        "UUID 1K-blocks Used Available Use% Mounted on\n"
        "fs-OST0000_UUID 1000 500 500 50% /fs[OST:0] f(0100)\n"
        "lfs: cannot open '/nope': No such file or directory\n"
        "filesystem_summary: 1000 500 500 50% /fs\n"
    )
    errors = []
    (fs,) = sp.parse_lfs_df(text, "lfs-df.txt", errors)
    assert fs["targets"][0]["flags"] == ["flash", "unknown:0100"]
    assert [e["kind"] for e in errors] == ["tool_error"] and "cannot open" in errors[0]["message"]


def test_5_1_one_bad_line_costs_that_line():
    text = fx("lustre-manual-myth-lfs-df-h-ost-full.txt").replace(
        "myth-OST0002_UUID           3.6T", "myth-OST0002_UUID  #garbled# 3.6T"
    )
    errors = []
    (fs,) = sp.parse_lfs_df(text, "lfs-df.txt", errors)
    assert len(errors) == 1 and errors[0]["line"] == 5
    assert {t["name"] for t in fs["targets"] if t["state"] == "active"} == {
        "myth-MDT0000",
        "myth-OST0000",
        "myth-OST0001",
        "myth-OST0003",
        "myth-OST0004",
    }
    with pytest.raises(ParseError):  # strict (no errors list): never a silent pass
        sp.parse_lfs_df(text)


# --- 5.2 lfs check -----------------------------------------------------------------------------------------------


def test_5_2_lfs_check_forms():
    ok = sp.parse_lfs_check(fx("ref52-lfs-check-servers.txt"))
    assert [(s["target"], s["state"]) for s in ok] == [("lustrefs-MDT0000", "active"), ("lustrefs-OST0001", "active")]
    mixed = sp.parse_lfs_check(fx("ref52-lfs-check-servers-colon-and-error.txt"))
    assert [(s["target"], s["state"]) for s in mixed] == [("pfs-MDT0000", "active"), ("fs-OST000b", "error")]
    assert mixed[1]["error"] == "Input/output error (5)"
    inactive = sp.parse_lfs_check("fs-OST0003-osc-ffff88003bfbd000 inactive.\n")
    assert inactive[0]["state"] == "inactive"
    errors = []
    assert sp.parse_lfs_check("lfs check: cannot find mounted Lustre filesystem: No such device\n", errors=errors) == []
    assert errors[0]["kind"] == "tool_error"
    errors = []
    out = sp.parse_lfs_check(fx("ref52-lfs-check-servers.txt") + "##garbage##\n", errors=errors)
    assert len(out) == 2 and [e["kind"] for e in errors] == ["parse"]


# --- 5.3 lctl get_param health_check -----------------------------------------------------------------------------


def test_5_3_health_check_forms():
    old = sp.parse_health_check(fx("ref53-lctl-health_check-old-form.txt"))
    assert old["healthy"] is False and old["devices"] == ["lustre-OST0012", "lustre-OST0014"]
    two = sp.parse_health_check("health_check=healthy\nhealth_check=NOT HEALTHY\n")  # sysfs + debugfs (< 2.16.59)
    assert two["entries"] == 2 and two["healthy"] is False
    assert sp.parse_health_check("health_check=healthy\nhealth_check=healthy\n")["healthy"] is True
    assert sp.parse_health_check("healthy\n")["healthy"] is True  # -n: the value only
    assert sp.parse_health_check("LBUG\n")["lbug"] is True
    console = sp.parse_health_check("lustre-OST0001: device reported unhealthy\nNOT HEALTHY\n")
    assert console["devices"] == ["lustre-OST0001"]
    errors = []
    assert sp.parse_health_check("health_check=healthy\nsomething else\n", errors=errors)["healthy"] is True
    assert [e["line"] for e in errors] == [2]


# --- 6 GPFS -Y ---------------------------------------------------------------------------------------------------


def test_6_header_keyed_rows_percent_decoding_extras_and_missing_fields():
    text = (
        "mmhealth:State:HEADER:version:reserved:reserved:node:component:entityname:entitytype:status:"
        "laststatuschange:\n"
        "mmhealth:Event:HEADER:version:reserved:reserved:node:component:entityname:entitytype:event:arguments:\n"
        "mmhealth:State:0:1:::n1:GPFS:n1:NODE:DEGRADED:2026-01-01 10%3A00%3A00 UTC:extra:fields:\n"
        "mmhealth:Event:0:1:::n1:GPFS:n1:NODE:disk_down:%2Fdev%2Fsdb:msg%3A a:STATE_CHANGE:ERROR:\n"
        "mmhealth:State:0:1:::n2:GPFS:n2:NODE:HEALTHY\n"  # laststatuschange missing: tolerated
        "mmhealth:State:0:1:::n3:GPFS\n"  # no status: costs this row
        "mmhealth:Event:HEADER:version:reserved:reserved:node:component:event:\n"  # the most recent HEADER wins
        "mmhealth:Event:0:1:::n4:NETWORK:ib_rdma_link_down:\n"
    )
    errors = []
    h = sg.parse_mmhealth(text, "mmhealth.txt", errors)
    assert [(s["node"], s["status"]) for s in h["states"]] == [("n1", "DEGRADED"), ("n2", "HEALTHY")]
    assert h["states"][0]["since"] == "2026-01-01 10:00:00 UTC"
    ev = h["events"][0]
    assert (ev["arguments"], ev["message"], ev["type"], ev["severity"]) == (
        "/dev/sdb",
        "msg: a",
        "STATE_CHANGE",
        "ERROR",
    )
    assert h["events"][1]["event"] == "ib_rdma_link_down" and h["events"][1]["entity"] == "n4"
    assert [e["line"] for e in errors] == [6]


def test_6_1_mmhealth_node_show_real_samples():
    trey = sg.parse_mmhealth(fx("treydock-mmhealth-node-show-Y.txt"))
    conn = [e for e in trey["events"] if e["event"] == "cluster_connections_down"]
    assert {(e["severity"], e["type"]) for e in conn} == {("WARNING", "STATE_CHANGE")}  # the appended fields
    assert conn[0]["message"].startswith("Connection to cluster node 10.22.51.57 has all 1 connection(s) down")
    old = sg.parse_mmhealth(fx("vsc-mmhealth-node-show-Y-gpfs-failed.txt"))  # no laststatuschange column
    assert [s["status"] for s in old["states"][:2]] == ["FAILED", "FAILED"] and old["states"][0]["since"] is None
    assert {e["event"] for e in old["events"]} >= {"gpfs_down", "quorum_down"}


def test_6_2_mmhealth_cluster_show_Y_and_table():
    (row,) = sg.parse_mmhealth(fx("ref62-mmhealth-cluster-show-Y.txt"))["summary"]
    assert row == {
        "component": "NODE",
        "entity": "NODE",
        "total": 4,
        "failed": 0,
        "degraded": 0,
        "healthy": 0,
        "other": 4,
    }
    table = "Component     Total   Failed   Degraded   Healthy   Other\n---\nNODE  4  1  0  3  0\nGPFS 4 0 1 3 0\n"
    rows = sg.parse_mmhealth(table)["summary"]
    assert [(r["component"], r["failed"], r["degraded"]) for r in rows] == [("NODE", 1, 0), ("GPFS", 0, 1)]
    with pytest.raises(ParseError, match="mmhealth node show -Y"):
        sg.parse_mmhealth("Node name: c1\nNode status: HEALTHY\n")


def test_6_3_mmlsdisk_and_mmdf():
    (disk,) = sg.parse_mmlsdisk(fx("ref63-mmlsdisk-Y.txt"))
    assert (disk["name"], disk["status"], disk["availability"], disk["size_kb"]) == (
        "RG001VS003",
        "ready",
        "up",
        130518089728,
    )
    errors = []
    df = sg.parse_mmdf(fx("treydock-mmdf-Y-errors.txt"), "mmdf.txt", errors)  # fsTotal/inode rows garbled
    assert df["used_pct"] is None and [n["name"] for n in df["nsds"]] == ["P_META_VD102", "P_DATA_VD02"]
    assert len(errors) == 2
    errors = []
    assert sg.parse_mmlsdisk("mmlsdisk: File system gpfs0 is not mounted.\n", errors=errors) == []
    assert errors[0]["kind"] == "tool_error"


# --- 7 NFS client ------------------------------------------------------------------------------------------------


def test_7_nfsstat_m_and_c():
    (m,) = sp.parse_nfsstat_m(fx("ref7-nfsstat-m-serverb.txt"))
    assert (m["mount"], m["server"], m["export"]) == ("/mnt/shared", "serverb", "/srv/shared")
    assert m["options"]["hard"] is True and m["options"]["vers"] == "4.2" and m["options"]["timeo"] == "600"
    newer = fx("ref7-nfsstat-m-serverb.txt").replace("addr=172.25.250.11", "addr=172.25.250.11,fatal_neterrors=none")
    assert sp.parse_nfsstat_m(newer)[0]["options"]["fatal_neterrors"] == "none"  # unknown keys kept, ignored
    assert sp.parse_nfsstat_rpc(fx("ref7-nfsstat-client-wide.txt")) == {
        "calls": 1453045225,
        "retrans": 19702,
        "authrefrsh": 744,
    }


# --- grading: thresholds.storage.states ---------------------------------------------------------------------------


def test_tips_node_with_a_connection_warning_is_not_a_p1(tmp_path):
    _facts, got = graded(tmp_path, {"mmhealth.txt": fx("treydock-mmhealth-node-show-Y.txt")})
    assert not [k for k, v in got.items() if v[0] in ("P0", "P1", "P2") and k[0] != "collector:storage"]
    assert got[("storage:server:gpfs:ib-haswell1.example.com:GPFS/10.22.51.57", "cluster_connections_down")] == (
        "P3",
        "monitor",
    )


def test_failed_degraded_depend_and_roll_ups(tmp_path):
    _facts, got = graded(tmp_path, {"mmhealth.txt": fx("vsc-mmhealth-node-show-Y-gpfs-failed.txt")})
    node = "storage:server:gpfs:storage2206.shuppet.gent.vsc"
    assert got == {
        ("%s:GPFS" % node, "failed"): ("P1", "contact_vendor"),
        ("%s:HADOOPCONNECTOR" % node, "degraded"): ("P2", "contact_vendor"),
        ("%s:FILESYSTEM" % node, "depend"): ("P3", "monitor"),
        ("%s:CES" % node, "depend"): ("P3", "monitor"),
    }  # NODE FAILED is the GPFS failure rolled up: not a second finding; info events without severity: none


def test_a_degraded_filesystem_is_one_p2_and_a_healthy_node_nothing(tmp_path):
    _facts, got = graded(tmp_path, {"mmhealth.txt": fx("vsc-mmhealth-node-show-Y-fs-degraded.txt")})
    assert got == {
        ("storage:server:gpfs:nsd03.gastly.data:FILESYSTEM/kyukonhome", "degraded"): ("P2", "contact_vendor")
    }
    healthy = tmp_path / "healthy"
    healthy.mkdir()
    _facts, got = graded(healthy, {"mmhealth.txt": fx("vsc-mmhealth-node-show-Y-healthy-subset.txt")})
    assert got == {}


def test_lustre_states_and_flags(tmp_path):
    facts, got = graded(
        tmp_path,
        {
            "lfs-df-hv.txt": fx("ref51-lfs-df-hv-flags-inactive.txt"),
            "lfs-check-servers.txt": "fs-OST0003-osc-ffff88003bfbd000 inactive.\n"
            + fx("ref52-lfs-check-servers-colon-and-error.txt"),
            "health_check.txt": fx("ref53-lctl-health_check-old-form.txt"),
        },
    )
    t = "storage:testfs/testfs-OST000"
    assert got[(t + "1", "degraded")] == ("P2", "contact_vendor")
    assert got[(t + "2", "read_only")] == ("P1", "contact_vendor")
    assert got[(t + "3", "inactive")] == ("P2", "contact_vendor")
    assert got[(t + "0", "missing")] == ("P3", "monitor")
    assert got[("storage:server:fs-OST0003", "inactive")] == ("P2", "contact_vendor")
    assert got[("storage:server:fs-OST000b", "down")] == ("P1", "contact_vendor")
    assert got[("storage:server:lustre:health_check", "unhealthy")] == ("P1", "contact_vendor")
    assert not any(k[0] == "storage:server:pfs-MDT0000" for k in got)
    assert facts["errors"] == []


def test_eagain_target_and_nsd_words(tmp_path):
    disks = fx("ref63-mmlsdisk-Y.txt")
    for name, status, avail in (("D2", "suspended", "up"), ("D3", "ready", "recovering"), ("D4", "ready", "down")):
        disks += "mmlsdisk::0:1:::%s:nsd:512:1:yes:yes:%s:%s:1:system:desc:3:2:2:1:C0::\n" % (name, status, avail)
    _facts, got = graded(tmp_path, {"lfs-df.txt": fx("ref51-lfs-df-pre210-eagain.txt"), "mmlsdisk-ess.txt": disks})
    assert got[("storage:pfs/pfs-OST0001", "unavailable")] == ("P1", "contact_vendor")
    assert got[("storage:ess/D2", "suspended/up")] == ("P3", "monitor")
    assert got[("storage:ess/D3", "ready/recovering")] == ("P2", "monitor")
    assert got[("storage:ess/D4", "ready/down")] == ("P1", "contact_vendor")
    assert not any("RG001VS003" in k[0] for k in got)


def test_healthy_outputs_raise_nothing(tmp_path):
    _facts, got = graded(
        tmp_path,
        {
            "lfs-df-h.txt": fx("lustre-manual-lfs-df-h.txt"),
            "lfs-check-servers.txt": fx("ref52-lfs-check-servers.txt"),
            "lctl-health_check.txt": "health_check=healthy\n",
            "mmhealth-cluster.txt": fx("ref62-mmhealth-cluster-show-Y.txt"),
            "mmlsdisk-ess.txt": fx("ref63-mmlsdisk-Y.txt"),
            "nfsstat-m.txt": fx("ref7-nfsstat-m-serverb.txt"),
            "nfsstat-c.txt": fx("ref7-nfsstat-client-wide.txt"),
        },
    )
    assert got == {}


def test_a_partial_capture_is_unknown_for_its_missing_parts_not_an_error(tmp_path):
    facts, got = graded(tmp_path, {"lfs-df-h.txt": fx("lustre-manual-lfs-df-h.txt")})
    assert got == {} and facts["errors"] == []
    assert [u["part"] for u in facts["unknown"]] == ["lustre:inodes", "lustre:servers", "lustre:health"]
    os.symlink("/etc/passwd", tmp_path / "mmhealth.txt")  # present but unreadable: an error, not "unknown"
    facts = collect_storage(capture_dir=str(tmp_path))
    assert [e["kind"] for e in facts["errors"]] == ["unreadable"]
    assert "gpfs:health" not in [u["part"] for u in facts["unknown"]]


def test_every_state_row_has_a_source_and_sites_can_regrade(tmp_path):
    states = DEFAULT_POLICY["thresholds"]["storage"]["states"]
    for table, rows in states.items():
        for word, rule in rows.items():
            assert rule["source"] and rule["action"] not in ("isolate", "reboot", "replace"), (table, word)
    policy = merge_policy(
        overrides={"thresholds": {"storage": {"states": {"gpfs_event": {"WARNING": {"severity": "P2"}}}}}}
    )
    (tmp_path / "mmhealth.txt").write_text(fx("treydock-mmhealth-node-show-Y.txt"))
    facts = collect_storage(capture_dir=str(tmp_path))
    sev = {f["severity"] for f in check_storage(facts, policy, NOW) if f["code"] == "cluster_connections_down"}
    assert sev == {"P2"}
    bad = copy.deepcopy(DEFAULT_POLICY)
    bad["thresholds"]["storage"]["states"]["gpfs_component"]["FAILED"]["action"] = "reboot"
    with pytest.raises(PolicyError, match="gpfs_component.FAILED.action"):
        check_storage(facts, bad, NOW)
    bad["thresholds"]["storage"]["states"]["gpfs_component"]["FAILED"] = {"severity": "P9", "action": "monitor"}
    with pytest.raises(PolicyError, match="gpfs_component.FAILED.severity"):
        check_storage(facts, bad, NOW)


def test_capture_names_an_operator_uses(tmp_path):
    for name, fixture in (
        ("lfs-df-ih.txt", "lustre-manual-myth-lfs-df-i-mdt-inodes-full.txt"),
        ("mmhealth-node-show.txt", "vsc-mmhealth-node-show-Y-fs-degraded.txt"),
        ("lfs-check-all.txt", "ref52-lfs-check-servers-colon-and-error.txt"),
        ("nfsstat.txt", "ref7-nfsstat-client-wide.txt"),  # -c output under the -m name: the content decides
    ):
        shutil.copy(os.path.join(FIX, fixture), tmp_path / name)
    facts = collect_storage(capture_dir=str(tmp_path))
    assert facts["errors"] == [] and facts["nfs_rpc"]["calls"] == 1453045225
    ids = {(f["component"], f["code"]) for f in check_storage(facts, None, NOW)}
    assert ("storage:myth/myth-MDT0000", "inodes") in ids
    assert ("storage:server:fs-OST000b", "down") in ids
    assert ("storage:server:gpfs:nsd03.gastly.data:FILESYSTEM/kyukonhome", "degraded") in ids
