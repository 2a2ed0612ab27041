# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The EDA event source gpuops.cluster.redfish_leak (extensions/eda/plugins/event_source/redfish_leak.py).

The BMC here is a local HTTP server serving the DMTF Redfish resource chain Chassis -> ThermalSubsystem ->
LeakDetection -> LeakDetectors -> LeakDetector (DMTF DSP0268 2023.1, LeakDetector.v1_1_0: DetectorState is a
Resource.Health, OK / Warning / Critical; ComputerSystem.Links.Chassis names a system's chassis). Expected values
come from that schema and the source's contract (one event per state change, a leak never inferred from silence,
nothing the BMC writes reaches the event but ids), not from the code. The source runs under the real
ansible-rulebook in tests/integration/test_realtime_chain.py.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location(
    "gpuops_eda_redfish_leak", os.path.join(ROOT, "extensions", "eda", "plugins", "event_source", "redfish_leak.py")
)
rl = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rl)

JINJA = "{{ lookup('pipe', 'id') }}"
CH = "/redfish/v1/Chassis/1U"


class Bmc:
    """A tiny Redfish service: one system, one chassis with two leak detectors; Basic auth only (no sessions)."""

    def __init__(self):
        self.state = {"CP0": "OK", "CP1": "OK"}
        self.down = False
        self.gets = []
        bmc = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):  # noqa: N802 - no SessionService here
                self.send_response(404)
                self.end_headers()

            def do_GET(self):  # noqa: N802
                bmc.gets.append(self.path)
                doc = bmc.doc(self.path)
                if bmc.down or doc is None or self.headers.get("Authorization") is None:
                    self.send_response(503 if bmc.down else 404 if doc is None else 401)
                    self.end_headers()
                    return
                body = json.dumps(doc).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.origin = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def doc(self, path):
        dets = CH + "/ThermalSubsystem/LeakDetection/LeakDetectors"
        docs = {
            "/redfish/v1/Systems/sys1": {"Id": "sys1", "Links": {"Chassis": [{"@odata.id": CH}]}},
            "/redfish/v1/Chassis": {"Members": [{"@odata.id": CH}]},
            CH: {"Id": "1U", "ThermalSubsystem": {"@odata.id": CH + "/ThermalSubsystem"}},
            CH + "/ThermalSubsystem": {"LeakDetection": {"@odata.id": CH + "/ThermalSubsystem/LeakDetection"}},
            CH + "/ThermalSubsystem/LeakDetection": {"LeakDetectors": {"@odata.id": dets}},
            dets: {"Members": [{"@odata.id": dets + "/CP0"}, {"@odata.id": dets + "/CP1"}]},
        }
        for name, state in self.state.items():
            docs[dets + "/" + name] = {
                "@odata.type": "#LeakDetector.v1_1_0.LeakDetector",
                "Id": name,
                "Name": "Cold plate %s %s" % (name, JINJA),  # free text: never in an event
                "DetectorState": state,
                "Status": {"State": "Enabled", "Health": state},
            }
        return docs.get(path)


@pytest.fixture
def bmc():
    b = Bmc()
    yield b
    b.server.shutdown()


def _targets(tmp_path, origin, **extra):
    pw = tmp_path / "pw"
    pw.write_text("s3cret-pw\n")
    t = {"node": "gpu-node-07", "bmc": origin, "system": "sys1", "user": "admin", "password_file": str(pw)}
    t.update(extra)
    path = tmp_path / "targets.json"
    path.write_text(json.dumps({"targets": [t]}))
    return str(path)


async def _events(args, steps, bmc):
    """Run the source; after each complete poll that followed the last step apply the next step (a condition
    with a 10 s deadline, not a sleep: a loaded machine polls late); the events collected."""
    q: asyncio.Queue = asyncio.Queue()
    task = asyncio.ensure_future(rl.main(q, args))

    def polled(mark):  # two polls began after `mark` GETs: the second one read everything after the last step
        new = bmc.gets[mark:]
        return len(new) >= 2 if bmc.down else sum(1 for p in new if p.endswith("/CP1")) >= 2

    async def polled_after(mark):
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while not polled(mark):
            assert loop.time() < deadline, "the source did not poll within 10 s"
            await asyncio.sleep(0.05)

    out = []
    for step in list(steps) + [None]:
        mark = len(bmc.gets)
        await polled_after(mark)
        if step:
            step()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    while not q.empty():
        out.append(q.get_nowait())
    return out


def test_one_event_per_change_and_only_ids(tmp_path, bmc):
    args = {"targets_file": _targets(tmp_path, bmc.origin), "interval": 0.5, "allow_http": True}

    def leak():
        bmc.state["CP0"] = "Critical"

    def still():
        pass

    def dry():
        bmc.state["CP0"] = "OK"

    events = asyncio.run(_events(args, [leak, still, still, dry], bmc))
    leaks = [e["leak_event"] for e in events]
    assert [(e["detector"], e["previous"], e["state"]) for e in leaks] == [
        ("CP0", "OK", "Critical"),
        ("CP0", "Critical", "OK"),
    ], leaks
    first = leaks[0]
    assert first["node"] == "gpu-node-07" and first["chassis"] == "1U"
    assert first["ticket"].startswith("leak-") and len(first["ticket"]) == 21 and leaks[1]["ticket"] == first["ticket"]
    assert all(set(e) == {"leak_event"} for e in events)  # ansible-rulebook owns meta (it writes meta.source.name)
    text = json.dumps(events)
    assert "s3cret" not in text and "admin" not in text and "lookup" not in text and bmc.origin not in text


def test_a_silent_bmc_is_neither_a_leak_nor_its_end(tmp_path, bmc):
    args = {"targets_file": _targets(tmp_path, bmc.origin), "interval": 0.5, "allow_http": True}
    bmc.state["CP1"] = "Critical"  # already leaking when the source starts: said at once

    def silent():
        bmc.down = True

    def back():
        bmc.down = False

    events = asyncio.run(_events(args, [silent, silent, back], bmc))
    assert [(e["leak_event"]["detector"], e["leak_event"]["state"]) for e in events] == [("CP1", "Critical")]


def test_warning_is_a_change_lowercase_health_is_read():
    assert rl.detector_state({"DetectorState": "Warning"}) == "Warning"
    assert rl.detector_state({"Status": {"Health": "critical"}}) == "Critical"
    assert rl.detector_state({"DetectorState": "Leaking!"}) == "Unknown"
    assert rl.detector_state("x") == rl.detector_state({}) == "Unknown"


@pytest.mark.parametrize(
    "target,why",
    [
        ({"node": "all", "bmc": "https://10.0.0.1"}, "host name"),
        ({"node": "gpu-node-07\n", "bmc": "https://10.0.0.1"}, "host name"),
        ({"node": JINJA, "bmc": "https://10.0.0.1"}, "host name"),
        ({"node": "n1", "bmc": "http://10.0.0.1"}, "scheme"),
        ({"node": "n1", "bmc": "https://u:p@10.0.0.1"}, "origin only"),
        ({"node": "n1", "bmc": "https://10.0.0.1/redfish"}, "origin only"),
        ({"node": "n1", "bmc": "https://bmc_07{{x}}"}, "host name or address"),
        ({"node": "n1", "bmc": "https://10.0.0.1", "system": "../x"}, "not an id"),
        ({"node": "n1", "bmc": "https://10.0.0.1:99999"}, "port"),
    ],
)
def test_targets_are_validated_with_full_matches(target, why):
    with pytest.raises(rl.Refused, match=why):
        rl.check_targets({"targets": [target]}, rl.check_args({}))


def test_good_targets_and_options():
    opts = rl.check_args({"interval": "2", "validate_certs": "false", "user": "ops"})
    out = rl.check_targets([{"node": "gpu-07", "bmc": "https://[fd00::7]:8443/"}], opts)
    assert out[0]["bmc"] == "https://[fd00::7]:8443" and out[0]["user"] == "ops" and out[0]["validate_certs"] is False
    with pytest.raises(rl.Refused, match="interval"):
        rl.check_args({"interval": 0})
    with pytest.raises(rl.Refused, match="twice"):
        rl.check_targets([{"node": "a", "bmc": "https://x"}, {"node": "a", "bmc": "https://y"}], opts)


def test_paths_from_a_bmc_are_refused_unless_plain_redfish():
    b = rl.Bmc(rl.check_targets([{"node": "a", "bmc": "https://127.0.0.1:9"}], rl.check_args({}))[0], 1)
    with pytest.raises(rl.Refused):
        b._open("GET", "/redfish/v1/../../etc/passwd?x")
    with pytest.raises(rl.Refused):
        b._open("GET", "http://evil/redfish/v1/x")
    with pytest.raises(rl.Refused):
        b._open("GET", "/redfish/v1/Chassis/../../../x")


def test_no_targets_file_idles():
    async def go():
        q: asyncio.Queue = asyncio.Queue()
        task = asyncio.ensure_future(rl.main(q, {"targets_file": ""}))
        await asyncio.sleep(0.2)
        assert not task.done()
        task.cancel()
        return q.empty()

    assert asyncio.run(go())
