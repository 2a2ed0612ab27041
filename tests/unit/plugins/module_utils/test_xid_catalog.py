# Tests for the Xid catalogue (plugins/module_utils/_xid_catalog.py).
from __future__ import annotations

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils import _xid_catalog as xc

# Every code of formats.md 4.2 and health-policy-facts.md section 4.
REQUIRED = [
    8,
    13,
    31,
    32,
    38,
    43,
    44,
    45,
    46,
    48,
    54,
    56,
    57,
    58,
    62,
    63,
    64,
    68,
    69,
    74,
    79,
    80,
    92,
    94,
    95,
    109,
    110,
    119,
    120,
    121,
    136,
    137,
    140,
    143,
    144,
    145,
    146,
    147,
    148,
    149,
    150,
    151,
    154,
    155,
    156,
    157,
    158,
    159,
    162,
    163,
    164,
    165,
    168,
    171,
    172,
]


def test_covers_every_documented_code():
    missing = [c for c in REQUIRED if c not in xc.CATALOG]
    assert missing == []


@pytest.mark.parametrize("code", sorted(xc.CATALOG))
def test_entries_use_the_vocabularies(code):
    e = xc.CATALOG[code]
    assert e["code"] == code and e["known"] is True
    assert e["severity"] in xc.SEVERITIES
    assert e["action"] in xc.ACTIONS
    assert e["category"] in xc.CATEGORIES
    assert isinstance(e["user_caused"], bool)
    assert e["sources"]["nvidia"]
    if e["user_caused"]:
        assert e["severity"] == "P3" and e["action"] in ("none", "monitor", "restart_app")


def test_user_caused_codes_do_not_alarm_the_node():
    assert {13, 31, 43, 45} <= xc.USER_CAUSED
    assert not {48, 63, 64, 74, 79, 94, 95, 119} & xc.USER_CAUSED


@pytest.mark.parametrize(
    "code,severity,action,nvidia",
    [
        (79, "P1", "reboot", "RESTART_BM"),
        (48, "P1", "reset_gpu", "WORKFLOW_XID_48"),
        (64, "P1", "isolate", "RESET_GPU"),
        (95, "P1", "reset_gpu", "RESET_GPU"),
        (119, "P1", "reset_gpu", "RESET_GPU"),
        (63, "P3", "monitor", "IGNORE"),
        (92, "P3", "monitor", "IGNORE"),
        (94, "P3", "monitor", "RESTART_APP"),
        (54, "P2", "reseat", "CHECK_MECHANICALS"),
        (13, "P3", "restart_app", "RESTART_APP"),
    ],
)
def test_defaults(code, severity, action, nvidia):
    e = xc.lookup(code)
    assert (e["severity"], e["action"], e["nvidia_action"]) == (severity, action, nvidia)


def test_disagreements_are_recorded():
    for code in (13, 63, 64, 74, 94):
        assert xc.CATALOG[code]["disagreements"], code
    assert "gpud" in xc.CATALOG[63]["disagreements"]
    assert xc.CATALOG[79]["disagreements"] is None
    assert xc.CATALOG[64]["sources"]["aws_suite"] == "ISOLATE"
    assert xc.CATALOG[48]["sources"]["dcgm_health"] == "F"


def test_nvlink5_fatal_escalation():
    assert xc.CATALOG[145]["fatal_escalation"] == {"severity": "P1", "action": "reset_gpu"}
    assert xc.CATALOG[79]["fatal_escalation"] is None


def test_lookup_unknown_and_copies():
    e = xc.lookup(9999)
    assert (e["code"], e["known"], e["name"], e["category"]) == (9999, False, "UNKNOWN", "unknown")
    assert xc.lookup("79")["code"] == 79
    assert xc.lookup(None)["code"] is None and xc.lookup("x")["known"] is False
    e = xc.lookup(79)
    e["severity"] = "P3"
    e["sources"]["nvidia"] = "changed"
    assert xc.CATALOG[79]["severity"] == "P1" and xc.CATALOG[79]["sources"]["nvidia"] != "changed"


@pytest.mark.parametrize(
    "value,expected",
    [
        ("0x1", "gpu_reset"),
        (2, "node_reboot"),
        ("0x4", "drain_and_reset"),
        ("Drain P2P", "drain_p2p"),
        ("Node Reboot Required", "node_reboot"),
        ("GPU Reset Required", "gpu_reset"),
        ("None", "none"),
        ("0x9", None),
        (None, None),
        ("whatever", None),
    ],
)
def test_recovery_action_name(value, expected):
    assert xc.recovery_action_name(value) == expected
