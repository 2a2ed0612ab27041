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
        (64, "P1", "reset_gpu", "RESET_GPU"),  # issue 38: not isolate (NVIDIA: reset, then contact support)
        (95, "P1", "reset_gpu", "RESET_GPU"),
        (119, "P1", "reset_gpu", "RESET_GPU"),
        (63, "P3", "monitor", "IGNORE"),
        (92, "P3", "monitor", "IGNORE"),
        (94, "P3", "reset_gpu", "RESTART_APP"),  # issue 38: "reset the GPU when convenient"
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


# ----------------------------------------------------------------- NVIDIA's catalog, code by code (issue 20)

#: Recorded from docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html (immediate resolution bucket),
#: independently of the module's sheet: a typo in either fails the comparison.
NVIDIA_BUCKETS = {
    "RESET_GPU": [46, 62, 64, 95, 109, 110, 119, 120, 136, 140, 143, 155, 156, 158],
    "RESTART_BM": [79],
    "RESTART_VM": [151],
    "RESTART_APP": [8, 11, 13, 25, 31, 32, 39, 40, 41, 60, 68, 69, 70, 71, 72, 75, 76, 77, 80, 82, 83, 84, 85, 86]
    + [88, 89, 94, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 126, 127, 128, 129, 130, 131, 132, 133, 134, 135]
    + [139],
    "IGNORE": [14, 37, 38, 43, 44, 63, 66, 67, 92, 93, 106, 107, 108, 121, 137, 141, 152, 153, 157, 160, 161],
    "WORKFLOW_XID_48": [48],
    "WORKFLOW_XID_45": [45],
    "WORKFLOW_NVLINK_ERR": [74],
    "WORKFLOW_NVLINK5_ERR": [144, 145, 146, 147, 148, 149, 150],
    "CHECK_MECHANICALS": [54],
    "CHECK_UVM": [159],
    "UPDATE_SWFW": [78],
    "XID_154": [154],
}
#: Our severity per bucket (docs/checks.md "Xid"): one severity per bucket.
BUCKET_SEVERITY = {
    "RESET_GPU": "P1",
    "RESTART_BM": "P1",
    "RESTART_VM": "P1",
    "WORKFLOW_XID_48": "P1",
    "WORKFLOW_NVLINK_ERR": "P1",
    "CHECK_MECHANICALS": "P2",
    "CHECK_UVM": "P2",
    "XID_154": "P2",
    "RESTART_APP": "P3",
    "IGNORE": "P3",
    "WORKFLOW_XID_45": "P3",
    "WORKFLOW_NVLINK5_ERR": "P3",
    "UPDATE_SWFW": "P3",
    "CONTACT_SUPPORT": "P3",
}


@pytest.mark.parametrize("bucket", sorted(NVIDIA_BUCKETS))
def test_recorded_nvidia_bucket_per_code(bucket):
    for code in NVIDIA_BUCKETS[bucket]:
        assert xc.CATALOG[code]["nvidia_action"] == bucket, code
        assert xc.CATALOG[code]["sources"]["nvidia"].startswith(bucket), code


def test_the_whole_catalogue_walks_against_the_bucket_severity():
    """Every code: the bucket decides the severity (RESET_GPU P1 everywhere, not P2 for 46/62/109/110/136), the
    action is one the bucket allows, the source says where the decision comes from."""
    assert set(BUCKET_SEVERITY) == set(xc.BUCKETS)
    for code, e in sorted(xc.CATALOG.items()):
        bucket = e["nvidia_action"]
        assert e["source"], code
        if bucket is None:
            assert code in range(162, 174) or code == 185, code  # no bucket in the sheet, or newer than it
            assert "own decision" in e["source"], code
            continue
        assert e["severity"] == BUCKET_SEVERITY[bucket], (code, bucket, e["severity"])
        assert "%s -> %s" % (bucket, e["severity"]) in e["source"], code


def test_every_code_of_the_sheet_and_the_missing_ones_are_catalogued():
    assert set(range(1, 173)) <= set(xc.CATALOG)
    for code in [11, 25, 37, 39, 40, 41, 60, 66, 67, 70, 71, 72, 75, 76, 77, *range(82, 90), *range(96, 108)]:
        assert xc.CATALOG[code]["known"], code
    for code in [*range(126, 136), 139, 141, 142, 160, 161, 166, 167, 169, 170, 173, 185]:
        assert xc.CATALOG[code]["known"], code


@pytest.mark.parametrize(
    "code,name",
    [
        (56, "DISPLAY_CHANNEL_EXCEPTION"),
        (57, "FB_LINK_TRAINING_FAILURE_ERROR"),
        (58, "FB_MEMORY_ERROR"),
        (65, "ROBUST_CHANNEL_NVENC1_ERROR"),
        (81, "ROBUST_CHANNEL_VGA_SUBSYSTEM_ERROR"),
        (93, "INFOROM_ERASE_LIMIT_EXCEEDED"),
    ],
)
def test_nvidia_mnemonics(code, name):
    assert xc.CATALOG[code]["name"] == name


def test_defaults_for_application_ignore_and_the_fatal_newcomers():
    for code in (39, 70, 82, 96, 126, 139):  # engine exceptions: RESTART_APP
        assert (xc.CATALOG[code]["severity"], xc.CATALOG[code]["action"]) == ("P3", "restart_app"), code
    for code in (66, 106, 141, 160):  # IGNORE
        assert xc.CATALOG[code]["severity"] == "P3", code
    for code in (167, 169, 173):
        assert xc.CATALOG[code]["severity"] == "P1", code
    assert xc.CATALOG[167]["action"] == "reboot" and xc.CATALOG[169]["action"] == "reset_gpu"
    assert xc.lookup(250)["severity"] == "P2" and xc.lookup(250)["known"] is False
    # Xid 32: mostly PCIe quality (NVIDIA), not "check the application first"
    assert xc.CATALOG[32]["category"] == "pcie" and "PCIe" in xc.CATALOG[32]["note"]
    # NVLink5: IGNORE by default, Fatal lines escalate (decode sheet RESET_GPU sub-cases)
    for code in range(144, 151):
        assert (xc.CATALOG[code]["severity"], xc.CATALOG[code]["category"]) == ("P3", "nvlink")
    assert "diagnose" in xc.ACTIONS


# ------------------------------------------------------------ issue 38: NVIDIA's columns and the bucket actions

#: What each bucket of NVIDIA's "Resolution Buckets" sheet asks for, written here from NVIDIA's definitions
#: (gpu-knowledge-2026.md / Xid-Catalog.xlsx), not from the module: the actions of this collection that do it.
NVIDIA_BUCKET_ACTIONS = {
    "RESET_GPU": {
        "reset_gpu"
    },  # "Refer to ... GPU Reset capabilities & limitations; RESTART_BM is not deemed necessary"
    "RESTART_BM": {"reboot"},  # "Restart bare metal, system should be restarted"
    "RESTART_VM": {"reboot"},  # "VM owning the affected GPU must be restarted"
    "RESTART_APP": {"restart_app"},  # "The application should be restarted; RESET_GPU or RESTART_BM is not ..."
    "IGNORE": {"none", "monitor"},  # "No Action required"
    "CONTACT_SUPPORT": {"contact_vendor"},  # "Please contact your support organization"
    "CHECK_MECHANICALS": {"reseat"},  # "Check ... device seating and all applicable connections"
    "WORKFLOW_XID_48": {"reset_gpu"},  # "Solo: RESET_GPU / w/ 63 or 64: DRAIN_AND_RESET"
    "WORKFLOW_XID_45": {"none"},  # "Not Solo: IGNORE" (solo: RESTART_FM, decided per line)
    "WORKFLOW_NVLINK_ERR": {"reset_gpu"},  # registers decoded per line; "A GPU reset or node reboot is needed"
    "WORKFLOW_NVLINK5_ERR": {"none", "monitor"},  # decoded per line; most sub-cases IGNORE
    "CHECK_UVM": {"reset_gpu", "none"},  # "If UVM/vGPU is being utilized, RESET_GPU; otherwise IGNORE"
    "UPDATE_SWFW": set(),  # "Update Firmware and Software": no such action here
    "XID_154": set(),  # "Follow XID 154 reported guidance": the line decides
}


@pytest.mark.parametrize("code", sorted(c for c in xc.CATALOG if xc.CATALOG[c]["nvidia_action"]))
def test_every_default_action_agrees_with_nvidias_bucket_or_says_why_not(code):
    e = xc.CATALOG[code]
    if e["action"] in NVIDIA_BUCKET_ACTIONS[e["nvidia_action"]]:
        return
    assert e["override"], (code, e["nvidia_action"], e["action"])
    assert e["override"]["action"] == e["action"] and len(e["override"]["reason"]) > 30, code


def test_the_overrides_quote_nvidia():
    assert xc.CATALOG[94]["override"]["reason"].count("reset the GPU when convenient") == 1
    assert "cold reset the system" in xc.CATALOG[110]["override"]["reason"]
    assert xc.CATALOG[64]["override"] is None and xc.CATALOG[64]["action"] == "reset_gpu"


def test_nvidias_columns_per_code():
    # gpu-knowledge-2026.md section 2: "Xid 154 linkage: CUDA 12.7; GPU driver R565" on 48/63/64/74/79/94/95/145/149,
    # 160 needs R575; section 3.5: 144-150 B100/GB200 only
    for code in (48, 63, 64, 74, 79, 94, 95, 145, 149):
        assert xc.CATALOG[code]["xid154_linkage"] == "CUDA 12.7; GPU driver R565", code
    assert "R575" in xc.CATALOG[160]["xid154_linkage"]
    for code in range(144, 151):
        assert xc.CATALOG[code]["applies_to"] == {"A100": False, "H100": False, "B100": True, "GB200": True}
    assert xc.CATALOG[121]["applies_to"] == {"A100": False, "H100": False, "B100": False, "GB200": True}  # C2C
    assert "cold reset the system" in xc.CATALOG[110]["trigger"]
    assert "power cycle" in xc.CATALOG[119]["trigger"] and "power cycle" in xc.CATALOG[120]["trigger"]
    assert "when convenient" in xc.CATALOG[94]["trigger"]
    assert xc.CATALOG_VERSION["modified"].startswith("2025-") and xc.CATALOG[79]["catalog_version"]
    assert xc.lookup(999)["applies_to"] is None and xc.lookup(999)["override"] is None


def test_recovery_action_names_are_not_read_again_as_words():
    for name in xc.RECOVERY_ACTIONS.values():
        assert xc.recovery_action_name(name) == name
    assert xc.recovery_action_name("0x6") == "bus_reset" and xc.recovery_action_name("7") == "system_reboot"


def test_new_actions_are_in_the_vocabulary_and_disruptive_where_they_stop_work():
    from ansible_collections.gpuops.cluster.plugins.plugin_utils import _policy as P

    for action in ("power_cycle", "restart_fabric_manager", "drain_p2p", "recover_imex_domain"):
        assert action in xc.ACTIONS and action in P.DISRUPTIVE_ACTIONS
