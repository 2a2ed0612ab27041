# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The replace role's power step (issue 36: its readings and its "not confirmed" message left Jinja for
plugin_utils/replace/power.py and the action gpuops.cluster.power_outcome).

Oracles: the registered results have the shapes ansible.builtin.uri (status, json, msg),
community.general.redfish_command (msg "HTTP Error %s on POST request to '%s', extended message: '%s'",
community.general plugins/module_utils/redfish_utils.py) and community.general.ipmi_power (powerstate, changed)
give; the expected values are what roles/replace/tasks/power.yml at 42a96c3 computed from them in Jinja, written
out by hand (its message is also asserted by tests/integration/test_replace.py against the BMC emulator)."""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.cluster.plugins.action import power_outcome
from ansible_collections.gpuops.cluster.plugins.plugin_utils.replace import power as P

RESET = "https://10.0.0.7/redfish/v1/Systems/1/Actions/ComputerSystem.Reset"
REFUSED = "HTTP Error 400 on POST request to '%s', extended message: 'The request failed due to an internal service error.'" % RESET  # fmt: skip


def _loop(*items):
    return {"changed": False, "msg": "All items completed", "results": list(items)}


def test_redfish_readings():
    rf_set = _loop(
        {"item": "n1", "failed": True, "msg": REFUSED}, {"item": "n2", "changed": True, "msg": "Action was successful"}
    )
    rf_get = _loop(
        {"item": "n1", "status": 200, "json": {"PowerState": "On"}},
        {"item": "n2", "status": 200, "json": {"PowerState": "Off"}},
        {
            "item": "n3",
            "status": -1,
            "msg": "Status code was -1 and not [200]: Request failed: <urlopen error timed out>",
        },
        {"item": "n4"},
    )
    res = P.readings("off", ["n1", "n2", "n3", "n4"], ["n1", "n2", "n3", "n4"], rf_set, rf_get, {}, {})
    assert res == {
        "n1": {
            "bmc": True,
            "state": "on",
            "error": "The request failed due to an internal service error. (HTTP Error 400 on POST request to "
            "'https://10.0.0.7/redfish/v1/Systems/1/Actions/ComputerSystem.Reset')",
        },
        "n2": {"bmc": True, "state": "off", "error": None},
        "n3": {
            "bmc": True,
            "state": None,
            "error": "Status code was -1 and not [200]: Request failed: <urlopen error timed out>",
        },  # fmt: skip
        "n4": {"bmc": True, "state": None, "error": "BMC did not answer"},
    }
    assert P.unconfirmed("off", res) == ["n1", "n3", "n4"]
    assert P.unconfirmed_text("off", res) == (
        "power off not confirmed: n1 on - BMC: The request failed due to an internal service error. "
        "(HTTP Error 400 on POST request to 'https://10.0.0.7/redfish/v1/Systems/1/Actions/ComputerSystem.Reset'); "
        "n3 unknown - BMC: Status code was -1 and not [200]: Request failed: <urlopen error timed out>; "
        "n4 unknown - BMC: BMC did not answer"
    )


def test_redfish_not_there_without_a_request_message_has_no_error():
    res = P.readings(
        "on", ["n1"], ["n1"], {}, _loop({"item": "n1", "status": 200, "json": {"PowerState": "Off"}}), {}, {}
    )
    assert res == {"n1": {"bmc": True, "state": "off", "error": None}}
    assert P.unconfirmed_text("on", res) == "power on not confirmed: n1 off"


def test_a_plain_request_message_is_folded_and_cut_at_300():
    words = " ".join(["word"] * 100)  # 499 characters
    rf_set = _loop({"item": "n1", "msg": "first\n  line " + words})
    rf_get = _loop({"item": "n1", "status": 200, "json": {"PowerState": "On"}})
    error = P.readings("off", ["n1"], ["n1"], rf_set, rf_get, {}, {})["n1"]["error"]
    # Jinja's truncate(300): 297 characters, back to the last whole word, then "..."
    assert error == "first line " + " ".join(["word"] * 57) + "..."
    assert len(error) == 298


def test_ipmi_readings():
    ipmi_set = _loop(
        {"item": "n5", "failed": True, "msg": "Unspecified\nerror"},
        {"item": "n6", "changed": True, "powerstate": "off"},
    )
    ipmi_get = _loop(
        {"item": "n5", "changed": True, "powerstate": "on"},
        {"item": "n6", "changed": False, "powerstate": "off"},
        {"item": "n7", "failed": True, "msg": "Unable to establish IPMI v2 / RMCP+ session"},
    )
    res = P.readings("off", ["n5", "n6", "n7", "n8"], ["n5", "n6", "n7"], {}, {}, ipmi_set, ipmi_get)
    assert res == {
        "n5": {"bmc": True, "state": "on", "error": "Unspecified error"},
        "n6": {"bmc": True, "state": "off", "error": None},
        "n7": {"bmc": True, "state": None, "error": "Unable to establish IPMI v2 / RMCP+ session"},
        "n8": {"bmc": False, "state": None, "error": "no BMC configured"},
    }
    assert P.unconfirmed_text("off", res) == (
        "power off not confirmed: n5 on - BMC: Unspecified error; "
        "n7 unknown - BMC: Unable to establish IPMI v2 / RMCP+ session; n8 unknown - BMC: no BMC configured"
    )
    # powering on: a node still moving is off
    res = P.readings("on", ["n5"], ["n5"], {}, {}, {}, _loop({"item": "n5", "changed": True, "powerstate": "off"}))
    assert res == {"n5": {"bmc": True, "state": "off", "error": None}}


def test_order_redfish_then_ipmi_then_without_bmc_and_all_confirmed():
    rf_get = _loop({"item": "r1", "status": 200, "json": {"PowerState": "Off"}})
    ipmi_get = _loop({"item": "i1", "changed": False, "powerstate": "off"})
    res = P.readings("off", ["x1", "i1", "r1"], ["r1", "i1"], {}, rf_get, {}, ipmi_get)
    assert list(res) == ["r1", "i1", "x1"]
    assert P.unconfirmed_text("off", {k: res[k] for k in ("r1", "i1")}) == ""


def test_skipped_or_broken_registrations_give_no_readings():
    skipped = {"skipped": True, "results": [], "msg": "All items skipped"}
    res = P.readings("off", ["n1"], ["n1"], skipped, "junk", None, {"results": ["junk", 3]})
    assert res == {}
    assert P.unconfirmed_text("off", res) == ""
    with pytest.raises(ValueError, match="want must be one of on, off, not 'reboot'"):
        P.readings("reboot", [], [], {}, {}, {}, {})


def test_the_action(run_action):
    args = {
        "want": "off",
        "nodes": ["n1", "n2"],
        "with_bmc": ["n1"],
        "redfish_get": _loop({"item": "n1", "status": 200, "json": {"PowerState": "On"}}),
    }
    out = run_action(power_outcome, args)
    assert not out.get("failed"), out
    assert out["changed"] is False and out["unconfirmed"] == ["n1", "n2"]
    assert out["result"]["n2"] == {"bmc": False, "state": None, "error": "no BMC configured"}
    assert out["message"] == "power off not confirmed: n1 on; n2 unknown - BMC: no BMC configured"
    bad = run_action(power_outcome, {"want": "sideways", "nodes": []})
    assert bad["failed"] is True and "want" in bad["msg"]
