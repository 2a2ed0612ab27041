# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""_fwupdate: the Redfish SimpleUpdate protocol (202 + task monitor polling); the run report is test_upgrade.py."""

from __future__ import annotations


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.module_utils import _fwupdate as F
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError


def task(state, pct=None, msg=None, tid="1000"):
    doc = {"@odata.id": "/redfish/v1/TaskService/Tasks/%s" % tid, "Id": tid, "TaskState": state, "TaskStatus": "OK"}
    if pct is not None:
        doc["PercentComplete"] = pct
    if msg:
        doc["Messages"] = [{"Message": msg, "MessageId": "Update.1.0.X"}]
    return doc


class FakeBMC:
    """Answers a scripted list of (status, headers, body) to GETs; a fake clock advanced by sleep()."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.urls = []
        self.now = 0.0
        self.slept = []

    def get(self, url):
        self.urls.append(url)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    def clock(self):
        return self.now

    def sleep(self, s):
        self.slept.append(s)
        self.now += s


MON = "/redfish/v1/TaskService/TaskMonitors/1000"


def poll(bmc, timeout=60, **kw):
    return F.poll_task(bmc.get, MON, timeout, clock=bmc.clock, sleep=bmc.sleep, **kw)


# ------------------------------------------------------------------------------------------------ protocol


def test_body_and_refusal_of_empty_image():
    assert F.simple_update_body(" https://repo/bios-2.4.1.bin ", ["/redfish/v1/UpdateService/FirmwareInventory/BIOS"],
                                "HTTPS") == {"ImageURI": "https://repo/bios-2.4.1.bin",
                                             "Targets": ["/redfish/v1/UpdateService/FirmwareInventory/BIOS"],
                                             "TransferProtocol": "HTTPS"}  # fmt: skip
    assert F.simple_update_body("x") == {"ImageURI": "x"}
    for bad in ("", "  ", None):
        with pytest.raises(ParseError):
            F.simple_update_body(bad)


def test_accepted_202_takes_location_then_task_monitor_field():
    a = F.accepted(202, {"location": MON}, task("Running", 0))
    assert a == {"done": False, "monitor": MON, "task": task("Running", 0)}
    b = F.accepted(202, {}, dict(task("New"), TaskMonitor="/tm/7"))
    assert b["monitor"] == "/tm/7"
    with pytest.raises(F.UpdateError, match="without a Location"):
        F.accepted(202, {}, None)


def test_accepted_immediate_and_refused():
    assert F.accepted(204, {}, None) == {"done": True, "monitor": None, "task": None}
    assert F.accepted(200, {}, task("Completed"))["done"] is True
    with pytest.raises(F.UpdateError, match="update failed"):
        F.accepted(200, {}, task("Exception", msg="bad image"))
    err = {"error": {"code": "Base.1.0.ActionParameterValueError", "message": "unknown target gpu-node-09-BIOS"}}
    with pytest.raises(F.UpdateError, match="HTTP 400: unknown target gpu-node-09-BIOS"):
        F.accepted(400, {}, err)
    ext = {"error": {"@Message.ExtendedInfo": [{"Message": "ImageURI is required"}]}}
    with pytest.raises(F.UpdateError, match="ImageURI is required"):
        F.accepted(400, {}, ext)


def test_poll_until_completed_honours_retry_after():
    bmc = FakeBMC([(202, {"Retry-After": "3"}, task("Running", 0)), (202, {}, task("Running", 66)),
                   (200, {}, task("Completed", 100, "applied; pending reset"))])  # fmt: skip
    out = poll(bmc, interval=1.0)
    assert out["polls"] == 3 and bmc.slept == [3.0, 1.0]
    assert out["outcome"]["state"] == "Completed" and out["outcome"]["message"] == "applied; pending reset"
    assert bmc.urls == [MON] * 3


def test_poll_200_running_keeps_polling_and_retry_after_is_capped():
    bmc = FakeBMC([(200, {}, task("Running", 10)), (202, {"Retry-After": "600"}, None), (200, {}, task("Completed"))])
    out = poll(bmc, timeout=100, max_interval=5)
    assert bmc.slept == [1.0, 5.0] and out["outcome"]["state"] == "Completed"


def test_poll_failed_task_reports_its_message():
    bmc = FakeBMC([(202, {}, task("Running")), (200, {}, task("Exception", 100, "image verification failed"))])
    with pytest.raises(F.UpdateError) as exc:
        poll(bmc)
    assert "Exception (image verification failed)" in exc.value.message and exc.value.task["TaskState"] == "Exception"
    assert not exc.value.timed_out


def test_poll_times_out_with_progress():
    bmc = FakeBMC([(202, {"Retry-After": "10"}, task("Running", 40))])
    with pytest.raises(F.UpdateError) as exc:
        poll(bmc, timeout=25)
    assert exc.value.timed_out and "40% done" in exc.value.message and bmc.now <= 25


def test_poll_monitor_gone_after_running_is_done_but_not_on_first_poll():
    bmc = FakeBMC([(202, {}, task("Running", 50)), (204, {}, None)])
    out = poll(bmc)
    assert out["polls"] == 2 and out["task"]["PercentComplete"] == 50
    with pytest.raises(F.UpdateError, match="HTTP 404"):
        poll(FakeBMC([(404, {}, {"error": {"message": "not found"}})]))
    with pytest.raises(F.UpdateError, match="HTTP 500"):
        poll(FakeBMC([(202, {}, None), (500, {}, "oops")]))


def test_task_outcome_tolerates_missing_fields_and_refuses_non_objects():
    out = F.task_outcome({"TaskState": 7, "PercentComplete": True, "Messages": ["x", {"Message": 3}]})
    assert out == {"id": None, "state": "Unknown", "status": None, "percent": None, "message": "Unknown",
                   "running": False}  # fmt: skip
    for bad in (None, [], "Completed"):
        with pytest.raises(ParseError):
            F.task_outcome(bad)


def test_firmware_versions():
    members = [{"Id": "gpu-node-01-BIOS", "Version": "2.1.7"}, {"Id": "x", "Version": None}, {"Version": "1"}, "junk"]
    assert F.firmware_versions(members) == {"gpu-node-01-BIOS": "2.1.7", "x": None}
    assert F.firmware_versions(None) == {}


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([200, 202, 204, 404, 500]),
            st.dictionaries(st.sampled_from(["Retry-After", "Location", "x"]), st.text(max_size=5), max_size=2),
            st.one_of(
                st.none(),
                st.text(max_size=5),
                st.builds(task, st.sampled_from(["Running", "Completed", "Exception", "Killed", "New", "Weird"])),
            ),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_fuzz_poll_only_returns_or_raises_update_error(answers):
    bmc = FakeBMC(answers)
    try:
        out = poll(bmc, timeout=30)
    except F.UpdateError:
        return
    assert out["polls"] >= 1


def test_reset_sequence_falls_back_to_off_on_for_power_cycles():
    sushy = ["On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart", "Nmi", "ForceOn"]
    assert F.reset_sequence("PowerCycle", sushy) == ["ForceOff", "On"]
    assert F.reset_sequence("FullPowerCycle", sushy) == ["ForceOff", "On"]
    assert F.reset_sequence("ForceRestart", sushy) == ["ForceRestart"]
    assert F.reset_sequence("PowerCycle", None) == ["PowerCycle"] == F.reset_sequence("PowerCycle", "junk")
    assert F.reset_sequence("PowerCycle", ["PowerCycle", "On"]) == ["PowerCycle"]
    with pytest.raises(F.UpdateError, match="does not offer ResetType PowerCycle"):
        F.reset_sequence("PowerCycle", ["ForceRestart"])
    with pytest.raises(F.UpdateError, match="unknown ResetType"):
        F.reset_sequence("Explode", sushy)
