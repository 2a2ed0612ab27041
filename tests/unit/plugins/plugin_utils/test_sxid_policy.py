# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The policy's ``sxid.overrides`` over the NVSwitch SXid catalogue, and ``escalation["nvswitch.sxid"]``.

Lines keep the Fabric Manager guide's format as gpu-knowledge-2026.md section 4 quotes it
(``nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up``). The catalogue's own
verdicts are that section's table (always fatal: restart the host; potentially fatal: the line's word decides;
non-fatal: no recovery); the overridden verdicts are the policy's values, and DCGM's NVSWITCH_FATAL_ERROR =
ISOLATE (same section) is the site choice the class override models."""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.kernel_log import parse_kernel_log
from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy as P
from checks_helpers import facts, only, run


def _line(code, word, link=48, dev=1, bus="0000:06:00.0"):
    return "nvidia-nvswitch%d: SXid (PCI:%s): %d, %s, Link %d LTSSM Fault Up" % (dev, bus, code, word, link)


def _events(text, ts="2026-12-02T09:50:00Z"):
    evs = parse_kernel_log(text)
    for e in evs:
        e["timestamp"] = ts
    return evs


def _verdict(code, word, overrides=None, **policy):
    over = dict(policy)
    if overrides is not None:
        over["sxid"] = {"overrides": overrides}
    pol = P.merge_policy(None, over)
    (f,) = only(run(facts(events=_events(_line(code, word))), policy=pol)[0], "nvswitch.sxid", code=code)
    return f


def test_defaults_unchanged_without_overrides():
    # section 4: 22003 minion halt is always fatal (restart host); 20001 TX replay is non-fatal (none)
    assert P.DEFAULT_POLICY["sxid"]["overrides"] == {}
    f = _verdict(22003, "Fatal")
    assert (f["severity"], f["action"]) == ("P1", "reboot") and "sxid.overrides" not in f["rule"]
    f = _verdict(20001, "Non-fatal")
    assert (f["severity"], f["action"]) == ("P3", "monitor")


def test_code_override_escalates_a_non_fatal_sxid():
    f = _verdict(20001, "Non-fatal", {"20001": {"severity": "P2", "action": "diagnose"}})
    assert (f["severity"], f["action"]) == ("P2", "diagnose") and "sxid.overrides[20001]" in f["rule"]


def test_class_override_and_the_codes_own_row_wins():
    # a site that follows DCGM (NVSWITCH_FATAL_ERROR = ISOLATE) for the always-fatal class
    table = {"fatal": {"severity": "P1", "action": "isolate"}, "23005": {"severity": "P0", "action": "isolate"}}
    f = _verdict(22003, "Fatal", table)
    assert (f["severity"], f["action"]) == ("P1", "isolate") and "sxid.overrides[fatal]" in f["rule"]
    f = _verdict(23005, "Fatal", table)
    assert (f["severity"], f["action"]) == ("P0", "isolate") and "sxid.overrides[23005]" in f["rule"]
    # another class keeps the guide's verdict: 11012 single-bit ECC, non-fatal
    f = _verdict(11012, "Non-fatal", table)
    assert (f["severity"], f["action"]) == ("P3", "monitor")


def test_when_fatal_applies_only_to_lines_that_say_fatal():
    table = {"potentially_fatal": {"severity": "P1", "action": "isolate", "when_fatal": True}}
    f = _verdict(20034, "Fatal", table)
    assert (f["severity"], f["action"]) == ("P1", "isolate")
    f = _verdict(20034, "Non-fatal", table)  # the guide: potentially fatal, not this time
    assert (f["severity"], f["action"]) == ("P2", "monitor") and "sxid.overrides" not in f["rule"]


def test_unlisted_codes_have_their_own_key():
    f = _verdict(31999, "Non-fatal", {"unlisted": {"severity": "P3", "action": "monitor"}})
    assert (f["severity"], f["action"]) == ("P3", "monitor") and "sxid.overrides[unlisted]" in f["rule"]


@pytest.mark.parametrize(
    "table,needle",
    [
        ({"fatal_class": {"severity": "P1"}}, "sxid.overrides.fatal_class"),
        ({"20034": "P1"}, "sxid.overrides.20034"),
        ({"20034": {"severity": "P9"}}, "sxid.overrides.20034.severity"),
        ({"20034": {"action": "explode"}}, "sxid.overrides.20034.action"),
        ({"20034": {"sev": "P1"}}, "sxid.overrides.20034.sev"),
        ({"20034": {"when_fatal": "yes"}}, "sxid.overrides.20034.when_fatal"),
    ],
)
def test_bad_overrides_fail_with_the_key(table, needle):
    with pytest.raises(P.PolicyError) as err:
        P.merge_policy(None, {"sxid": {"overrides": table}})
    assert needle in str(err.value)


def test_sxid_overrides_must_be_a_mapping():
    with pytest.raises(P.PolicyError):
        P.merge_policy(None, {"sxid": {"overrides": ["20034"]}})


def test_escalation_of_a_repeated_fatal_sxid():
    # gpud escalates RebootSystem -> HardwareInspection when the same SXid persists after reboots (section 4);
    # a site says the same with escalation["nvswitch.sxid"]
    steps = [{"severity": "P1", "action": "reboot"}, {"severity": "P1", "action": "contact_vendor"}]
    pol = P.merge_policy(None, {"escalation": {"nvswitch.sxid": {"22003": {"window_days": 30, "steps": steps}}}})
    fs, st = run(facts(events=_events(_line(22003, "Fatal"))), policy=pol)
    (f,) = only(fs, "nvswitch.sxid", code=22003)
    assert f["action"] == "reboot"
    fs, st = run(facts(boot="b2"), state=st, now="2026-12-03T10:00:00Z", policy=pol)  # rebooted: cleared
    assert not only(fs, "nvswitch.sxid")
    again = _events(_line(22003, "Fatal"), ts="2026-12-04T09:59:00Z")
    fs, st = run(facts(boot="b2", events=again), state=st, now="2026-12-04T10:00:00Z", policy=pol)
    (f,) = only(fs, "nvswitch.sxid", code=22003)
    assert f["action"] == "contact_vendor" and "escalation[nvswitch.sxid][22003]" in f["rule"]
