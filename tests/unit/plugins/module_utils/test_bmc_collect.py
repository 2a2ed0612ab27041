from __future__ import annotations

import json
import os
import shutil
import stat
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import bmc as _bmc

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")
PASSWORD = "Hunter2-bmc-pw"


def _copy(src_folder, name, dst):
    shutil.copy(os.path.join(FIX, src_folder, name), dst)


@pytest.fixture
def capture(tmp_path):
    d = tmp_path / "cap"
    d.mkdir()
    _copy("ipmitool-sdr", "telegraf-sdr-elist-v2-with-unable-to-send.txt", d / "ipmitool-sdr.txt")
    _copy("ipmitool-sel", "intel-s2600-sel-elist-fan-psu-redundancy.txt", d / "ipmitool-sel.txt")
    _copy("ipmitool-mc-info", "hp-ilo-mc-info.txt", d / "ipmitool-mc-info.txt")
    (d / "redfish").mkdir()
    _copy("redfish", "dmtf-rackmount1-system.json", d / "redfish" / "anything.json")
    _copy("redfish", "telegraf-powersubsystem-psu-warning.json", d / "redfish" / "psu.json")
    return d


def test_capture_dir(capture):
    r = _bmc.collect(capture_dir=str(capture))
    assert r["source"] == "capture" and r["errors"] == []
    assert len(r["sensors"]) == 7 + 1  # 7 SDR rows + 1 Redfish PSU
    assert len(r["sel"]) == 49 and r["mc"]["firmware_revision"] == "1.28"
    assert r["redfish"]["systems"][0]["id"] == "437XR1138R2"
    assert r["redfish"]["psus"][0]["health"] == "Warning"
    assert r["fru"] == [] and r["sel_info"] == {}


def test_capture_errors(capture):
    (capture / "ipmitool-fru.txt").write_text("")
    (capture / "capture.json").write_text(
        json.dumps(
            {
                "files": {
                    "ipmitool-fru.txt": {"rc": 1, "stderr": "Device not present"},
                    "ipmitool-sel-info.txt": {"timed_out": True},
                }
            }
        )
    )
    (capture / "redfish" / "broken.json").write_text("{not json")
    (capture / "ipmitool-sel.txt").write_bytes(b"\xff\xfe | garbage | x | y | z\n")
    r = _bmc.collect(capture_dir=str(capture))
    kinds = sorted(e["kind"] for e in r["errors"])
    assert kinds == ["parse", "parse", "timeout", "tool_error"]
    assert any("broken.json" in (e["source"] or "") for e in r["errors"])
    assert len(r["sensors"]) == 8  # the rest still parsed


def test_empty_capture_dir(tmp_path):
    r = _bmc.collect(capture_dir=str(tmp_path))
    assert r["source"] is None and r["errors"] == [] and r["sensors"] == []
    assert set(r["redfish"]) == {
        "systems",
        "chassis",
        "firmware",
        "managers",
        "leak_detectors",
        "log_entries",
        "psus",
        "memory",
    }


def _fake_ipmitool(tmp_path, body):
    p = tmp_path / "ipmitool"
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return str(p)


def test_ipmi_lan_password_via_env_only(tmp_path):
    sdr = os.path.join(FIX, "ipmitool-sdr", "hpe-proliant-sdr-type-power-supply.txt")
    log = tmp_path / "argv.log"
    body = (
        'echo "$* ENV=$IPMI_PASSWORD" >> %s\n'
        'case "$*" in *"sdr elist"*) cat %s ;; *"sel elist"*) echo "SEL has no entries" ;;'
        ' *"mc info"*) echo "Firmware Revision : 2.10" ;; *) exit 1 ;; esac\n'
    ) % (log, sdr)
    exe = _fake_ipmitool(tmp_path, body)
    r = _bmc.collect(
        mode="ipmi_lan", host="10.0.0.9", user="admin", password=PASSWORD, port=6230, timeout=10, ipmitool_path=exe
    )
    assert r["source"] == "ipmitool" and len(r["sensors"]) == 3 and r["mc"]["firmware_revision"] == "2.10"
    lines = log.read_text().splitlines()
    assert lines[0].startswith("-I lanplus -C 3 -H 10.0.0.9 -p 6230 -U admin -E sdr elist")
    for ln in lines:
        argv, env = ln.split(" ENV=")
        assert PASSWORD not in argv and env == PASSWORD
    assert [e["kind"] for e in r["errors"]] == ["tool_error", "tool_error"]  # fru print, sel info: exit 1
    assert all(PASSWORD not in json.dumps(e) for e in r["errors"])


def test_inband_no_device_and_timeout(tmp_path):
    exe = _fake_ipmitool(
        tmp_path,
        'echo "Could not open device at /dev/ipmi0 or /dev/ipmi/0 or /dev/ipmidev/0: '
        'No such file or directory" >&2; exit 1\n',
    )
    r = _bmc.collect(mode="inband", ipmitool_path=exe, timeout=5)
    assert {e["kind"] for e in r["errors"]} == {"missing"} and len(r["errors"]) == 5
    slow = _fake_ipmitool(tmp_path, "sleep 30\n")
    r = _bmc.collect(mode="ipmi_lan", host="h", ipmitool_path=slow, timeout=0.5)
    assert [e["kind"] for e in r["errors"]] == ["timeout"]  # stops after the first timeout
    r = _bmc.collect(mode="inband", ipmitool_path=str(tmp_path / "nope"))
    assert r["source"] is None and r["errors"][0]["kind"] == "missing"


def test_bad_mode_and_missing_host():
    assert _bmc.collect(mode="telnet")["errors"][0]["kind"] == "internal"
    assert _bmc.collect(mode="redfish")["errors"][0]["kind"] == "missing"
    assert _bmc.ipmitool_argv("inband") == ["ipmitool"]


TREE = {
    "/redfish/v1": {"Systems": {"@odata.id": "/redfish/v1/Systems"}, "Chassis": {"@odata.id": "/redfish/v1/Chassis"}},
    "/redfish/v1/Systems": {"Members": [{"@odata.id": "/redfish/v1/Systems/1"}]},
    "/redfish/v1/Systems/1": {
        "@odata.type": "#ComputerSystem.v1_0_0.ComputerSystem",
        "Id": "1",
        "PowerState": "On",
        "Status": {"Health": "OK"},
        "LogServices": {"@odata.id": "/redfish/v1/Systems/1/LogServices"},
    },
    "/redfish/v1/Systems/1/LogServices": {"Members": [{"@odata.id": "/redfish/v1/Systems/1/LogServices/SEL"}]},
    "/redfish/v1/Systems/1/LogServices/SEL": {
        "Entries": {"@odata.id": "/redfish/v1/Systems/1/LogServices/SEL/Entries"}
    },
    "/redfish/v1/Systems/1/LogServices/SEL/Entries": {
        "Members": [
            {"@odata.type": "#LogEntry.v1_0_0.LogEntry", "Id": "1", "Severity": "Critical", "Message": "PSU1 failed"}
        ],
        "Members@odata.nextLink": "/redfish/v1/Systems/1/LogServices/SEL/Entries?$skip=1",
    },
    "/redfish/v1/Systems/1/LogServices/SEL/Entries?$skip=1": {
        "Members": [{"@odata.type": "#LogEntry.v1_0_0.LogEntry", "Id": "2", "Severity": "OK", "Message": "ok"}]
    },
    "/redfish/v1/Chassis": {"Members": [{"@odata.id": "/redfish/v1/Chassis/1"}]},
    "/redfish/v1/Chassis/1": {
        "@odata.type": "#Chassis.v1_0_0.Chassis",
        "Id": "1",
        "ThermalSubsystem": {"@odata.id": "/redfish/v1/Chassis/1/ThermalSubsystem"},
        "Power": {"@odata.id": "/redfish/v1/Chassis/1/Power"},
    },
    "/redfish/v1/Chassis/1/ThermalSubsystem": {"LeakDetection": {"@odata.id": "/redfish/v1/Chassis/1/LD"}},
    "/redfish/v1/Chassis/1/LD": {"LeakDetectors": {"@odata.id": "/redfish/v1/Chassis/1/LD/D"}},
    "/redfish/v1/Chassis/1/LD/D": {"Members": [{"@odata.id": "/redfish/v1/Chassis/1/LD/D/0"}]},
    "/redfish/v1/Chassis/1/LD/D/0": {
        "@odata.type": "#LeakDetector.v1_0_0.LeakDetector",
        "Name": "Tray",
        "DetectorState": "Critical",
    },
}


class Tree(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802
        doc = TREE.get(self.path)
        code = 200 if doc is not None else 404
        if self.path == "/redfish/v1/Chassis/1/Power":
            code, doc = 500, {"error": "boom"}
        data = json.dumps(doc or {}).encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_redfish_walk():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Tree)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        url = "http://127.0.0.1:%d" % srv.server_address[1]
        r = _bmc.collect(mode="redfish", host=url, user="u", password=PASSWORD, timeout=5)
    finally:
        srv.shutdown()
        srv.server_close()
    assert r["source"] == "redfish"
    assert [e["id"] for e in r["redfish"]["log_entries"]] == ["1", "2"]
    assert r["redfish"]["leak_detectors"][0]["state"] == "Critical"
    assert [s["status"] for s in r["sensors"] if s["type"] == "leak"] == ["critical"]
    assert len(r["errors"]) == 1 and "HTTP 500" in r["errors"][0]["message"]
    assert PASSWORD not in json.dumps(r)


def test_redfish_unreachable():
    r = _bmc.collect(mode="redfish", host="127.0.0.1", port=1, user="u", password=PASSWORD, timeout=2)
    assert r["source"] == "redfish" and len(r["errors"]) == 1 and r["errors"][0]["kind"] == "tool_error"
    assert _bmc.redfish_base_url("fe80::1", 8443) == "https://[fe80::1]:8443"


def test_redfish_walk_budget(monkeypatch):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Tree)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    monkeypatch.setattr(_bmc, "WALK_TIMEOUTS", 0)  # no time at all: only the root is refused
    try:
        url = "http://127.0.0.1:%d" % srv.server_address[1]
        r = _bmc.collect(mode="redfish", host=url, timeout=5)
    finally:
        srv.shutdown()
        srv.server_close()
    assert [e["kind"] for e in r["errors"]] == ["timeout"] and "stopped after" in r["errors"][0]["message"]
    assert r["redfish"]["systems"] == []


# ------------------------------------------------------------------ subset [leak] (issue 40)
# Documents: DMTF Redfish LeakDetector (DetectorState OK | Warning | Critical), LeakDetection, ThermalSubsystem,
# Chassis - the TREE above; the request lists below are written by hand from that tree, not by the code.

# ``/redfish/v1`` twice: the client reads the service root for its SessionService (auth auto), then the walk does.
FULL_WALK_PATHS = [
    "/redfish/v1",
    "/redfish/v1",
    "/redfish/v1/Systems",
    "/redfish/v1/Systems/1",
    "/redfish/v1/Systems/1/LogServices",
    "/redfish/v1/Systems/1/LogServices/SEL",
    "/redfish/v1/Systems/1/LogServices/SEL/Entries",
    "/redfish/v1/Systems/1/LogServices/SEL/Entries?$skip=1",
    "/redfish/v1/Chassis",
    "/redfish/v1/Chassis/1",
    "/redfish/v1/Chassis/1/ThermalSubsystem",
    "/redfish/v1/Chassis/1/LD",
    "/redfish/v1/Chassis/1/LD/D",
    "/redfish/v1/Chassis/1/LD/D/0",
    "/redfish/v1/Chassis/1/Power",
]
LEAK_PATHS = [
    "/redfish/v1",
    "/redfish/v1",
    "/redfish/v1/Chassis",
    "/redfish/v1/Chassis/1",
    "/redfish/v1/Chassis/1/ThermalSubsystem",
    "/redfish/v1/Chassis/1/LD",
    "/redfish/v1/Chassis/1/LD/D",
    "/redfish/v1/Chassis/1/LD/D/0",
]


def _serve(tree, fail=()):
    served = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):  # noqa: N802
            served.append(self.path)
            doc = tree.get(self.path)
            code = 200 if doc is not None else 404
            if self.path in fail or self.path == "/redfish/v1/Chassis/1/Power":
                code, doc = 500, {"error": "boom"}
            data = json.dumps(doc or {}).encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return served, Handler


def _read(tree, subset=None, fail=()):
    served, handler = _serve(tree, fail)
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = "http://127.0.0.1:%d" % srv.server_address[1]
        r = _bmc.collect(mode="redfish", host=url, user="u", password=PASSWORD, timeout=5, subset=subset)
    finally:
        srv.shutdown()
        srv.server_close()
    return r, served


def _tree(state):
    tree = dict(TREE)
    tree["/redfish/v1/Chassis/1/LD/D/0"] = dict(TREE["/redfish/v1/Chassis/1/LD/D/0"], DetectorState=state)
    return tree


@pytest.mark.parametrize("state,verdict", [("Critical", "asserted"), ("Warning", "warning"), ("OK", "clear")])
def test_redfish_leak_subset_fewer_requests_same_verdict(state, verdict):
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.leak import response as _leak

    full, full_served = _read(_tree(state))
    leak, leak_served = _read(_tree(state), subset=["leak"])
    assert sorted(full_served) == sorted(FULL_WALK_PATHS)
    assert sorted(leak_served) == sorted(LEAK_PATHS)  # 15 -> 8 requests on this tree
    assert _leak.detect(full)["state"] == _leak.detect(leak)["state"] == verdict
    assert _leak.detect(full)["asserted"] == _leak.detect(leak)["asserted"]
    assert leak["redfish"]["leak_detectors"] == full["redfish"]["leak_detectors"]
    assert leak["redfish"]["leak_detectors"][0]["state"] == state
    # what the subset did not read is said so, never an empty "healthy" list without a word
    assert leak["subset"] == ["leak"]
    assert {"redfish.systems", "redfish.log_entries", "sel", "sensors:non_leak"} <= set(leak["not_read"])
    assert leak["redfish"]["systems"] == [] and leak["errors"] == []
    assert "not_read" not in full and "subset" not in full
    assert PASSWORD not in json.dumps(leak)


def test_redfish_leak_subset_unreadable_detectors_never_clear():
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.leak import response as _leak

    r, served = _read(TREE, subset=["leak"], fail=("/redfish/v1/Chassis/1/LD/D",))
    assert "/redfish/v1/Systems" not in served
    assert r["redfish"]["leak_detectors"] == [] and len(r["errors"]) == 1 and "HTTP 500" in r["errors"][0]["message"]
    assert _leak.detect(r)["state"] == "unreadable"
    # a chassis without ThermalSubsystem: no leak detector read -> unreadable, not clear
    bare = {k: v for k, v in TREE.items() if "ThermalSubsystem" not in k and "/LD" not in k}
    bare["/redfish/v1/Chassis/1"] = {"@odata.type": "#Chassis.v1_0_0.Chassis", "Id": "1"}
    r, served = _read(bare, subset=["leak"])
    assert served == ["/redfish/v1", "/redfish/v1", "/redfish/v1/Chassis", "/redfish/v1/Chassis/1"]
    assert _leak.detect(r)["state"] == "unreadable"


def test_subset_unknown_is_an_error_record():
    r = _bmc.collect(mode="redfish", host="127.0.0.1", port=1, timeout=1, subset=["everything"])
    assert r["source"] is None and [e["kind"] for e in r["errors"]] == ["internal"]
    assert "unknown subset" in r["errors"][0]["message"]
