# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVIDIA Xid catalogue as data: what each code means and what we do about it by default.

Sources, recorded per entry in ``sources`` and ``source``:

* ``nvidia``: NVIDIA's Xid catalog, "Analyzing Xid Errors with the Xid Catalog"
  (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, Ampere and later; the sheet "Catalog" as
  generated into leptonai/gpud ``catalog_generated.go`` on 2025-10-29): mnemonic, description, the immediate
  resolution bucket (RESET_GPU, RESTART_BM, RESTART_VM, RESTART_APP, IGNORE, CHECK_MECHANICALS, CHECK_UVM,
  UPDATE_SWFW, CONTACT_SUPPORT, WORKFLOW_XID_48/45, WORKFLOW_NVLINK_ERR, WORKFLOW_NVLINK5_ERR, XID_154) and the
  investigatory one. ``_xid_nvidia.NVIDIA_SHEET_TEXT`` is that sheet, code by code.
* the sheet "XID 144-150 Decode" (per unit and error status: most NVLink5 sub-cases IGNORE, the Fatal ones
  RESET_GPU, some XID_154_EVAL) and WORKFLOW_NVLINK_ERR (Xid 74 register bits, as NVIDIA/NVSentinel design 022
  implements it): decoded in ``plugins/plugin_utils/checks/xid_decode.py``.
* what other tools do (DCGM health watches, k8s-device-plugin, gpud, GCM, Azure NHC, the AWS health suite, imbue),
  from health-policy-facts.md section 4, in ``sources`` and ``disagreements``.

Our default severity follows NVIDIA's immediate bucket (``BUCKETS``: one severity per bucket, so RESET_GPU is P1
for 46, 62, 109, 110, 136 as for 119, 120, 143, 158); the action may be more specific than the bucket (64: a
remap failure is an RMA criterion, so ``isolate``). Codes without a bucket in the sheet (162-172) and codes newer
than the sheet (173, 185) carry their own decision and say so in ``source``. A site overrides any of it in the
policy (``xid.overrides``).

Entry keys:
  code, name (NVIDIA mnemonic), description, category (hardware | memory | nvlink | driver | user_app |
  thermal | power | fabric | pcie | unknown), nvidia_action (immediate bucket), nvidia_investigatory,
  severity (P1 act now, P2 act soon, P3 watch), action (ACTIONS), user_caused (True: an application fault; must
  NOT raise a node alarm by itself), known (False only for the default entry), sources (what each tool does),
  source (where our decision comes from), disagreements (None or a note), note, fatal_escalation (None, or the
  severity/action to use when the line says "Fatal", NVLink5 144-150).

Runs on managed nodes (Python 3.8+) and on the controller. No Ansible imports.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._xid_nvidia import NVIDIA_SHEET_TEXT

SEVERITIES = ("P1", "P2", "P3")
ACTIONS = (
    "none",
    "monitor",
    "restart_app",
    "reset_gpu",
    "reboot",
    "isolate",
    "reseat",
    "replace",
    "tune",
    "emergency_shutdown",
    "contact_vendor",
    "diagnose",
)
CATEGORIES = ("hardware", "memory", "nvlink", "driver", "user_app", "thermal", "power", "fabric", "pcie", "unknown")

#: NVML GPU recovery action (nvmlDeviceGpuRecoveryAction_t) -> the gpu.recovery_action vocabulary.
RECOVERY_ACTIONS = {
    0: "none",
    1: "gpu_reset",
    2: "node_reboot",
    3: "drain_p2p",
    4: "drain_and_reset",
    5: "recover_imex_domain",
    6: "bus_reset",
    7: "system_reboot",
}

#: NVIDIA immediate resolution bucket -> (our severity, default action, actions a code of the bucket may use).
#: The severity is the bucket's, for every code of it (tests/unit walk the whole catalogue against this).
BUCKETS: Dict[str, Tuple[str, str, Tuple[str, ...]]] = {
    "RESET_GPU": ("P1", "reset_gpu", ("reset_gpu", "isolate")),
    "RESTART_BM": ("P1", "reboot", ("reboot",)),
    "RESTART_VM": ("P1", "reboot", ("reboot",)),
    "WORKFLOW_XID_48": ("P1", "reset_gpu", ("reset_gpu",)),
    # undecodable Xid 74 (no register dump on the line): DCGM fails the GPU; decoded lines follow the bit rules
    "WORKFLOW_NVLINK_ERR": ("P1", "reset_gpu", ("reset_gpu",)),
    "CHECK_MECHANICALS": ("P2", "reseat", ("reseat",)),
    "CHECK_UVM": ("P2", "monitor", ("monitor",)),
    "XID_154": ("P2", "monitor", ("monitor",)),  # the recovery action on the line decides (policy recovery_actions)
    "RESTART_APP": ("P3", "restart_app", ("restart_app", "monitor", "none")),
    "IGNORE": ("P3", "monitor", ("monitor", "none")),
    "WORKFLOW_XID_45": ("P3", "none", ("none",)),
    # NVLink5: most decoded sub-cases are IGNORE; the line's "Fatal" (RESET_GPU sub-cases) escalates to P1
    "WORKFLOW_NVLINK5_ERR": ("P3", "monitor", ("monitor",)),
    "UPDATE_SWFW": ("P3", "monitor", ("monitor",)),
    "CONTACT_SUPPORT": ("P3", "monitor", ("monitor", "contact_vendor")),  # "Unused" on Ampere+
}

_SHEET = "NVIDIA Xid catalog (analyzing-xid-catalog, sheet as of 2025-10-29)"

# Our decision where the bucket alone does not say it (category, user_caused, a more specific action, the note),
# and the whole decision for codes without a bucket. code: (category, severity or "", action or "", user, note)
# An empty severity/action takes the bucket's (BUCKETS).
_OURS: Dict[int, Tuple[str, str, str, bool, str]] = {
    8: (
        "driver",
        "",
        "monitor",
        False,
        "Hang/timeout, usually the application; repeated on one GPU -> check the hardware",
    ),
    11: (
        "driver",
        "",
        "",
        False,
        "Push buffer stream invalid: check the application/CUDA version, then PCIe (like Xid 32)",
    ),
    13: (
        "user_app",
        "",
        "",
        True,
        "Application bug (illegal address/instruction) most of the time; NVIDIA WORKFLOW_XID_13: the same GPC/TPC "
        "across applications points at the GPU -> run DCGM diag",
    ),
    25: ("driver", "", "", False, "Push buffer stream illegal: check the application/CUDA version"),
    31: (
        "user_app",
        "",
        "",
        True,
        "MMU page fault; an application bug unless repeated on the same GPU (NVIDIA WORKFLOW_XID_31: then DCGM diag)",
    ),
    32: (
        "pcie",
        "",
        "monitor",
        False,
        "Corrupted push buffer: mostly PCIe signal quality between CPU and GPU (check the PCIe replay counter, "
        "riser, slot), rarely the application (NVIDIA CHECK_APP/CUDA after RESTART_APP)",
    ),
    37: ("driver", "", "", False, "Driver firmware error"),
    38: ("driver", "", "", False, "Driver firmware error; report if repeated"),
    43: ("user_app", "", "none", True, "Reported when an application faults or is killed (Ctrl-C, OOM); informational"),
    44: ("driver", "", "", False, ""),
    45: ("user_app", "", "", True, "Channel torn down because of a PREVIOUS error: follow the causing Xid"),
    46: ("hardware", "", "", False, "GPU stopped processing: reset the GPU (NVIDIA RESET_GPU)"),
    48: (
        "memory",
        "",
        "",
        False,
        "Uncorrectable DRAM ECC; Ampere+: row remap pending -> reset; RMA only on NVIDIA's criteria (SRAM threshold "
        "flag, unrepairable memory, remap failure), not on a count of Xid 48",
    ),
    54: ("power", "", "", False, "Check the auxiliary power cables"),
    56: ("hardware", "", "", False, "Legacy display-channel code, 'Unused' on Ampere+"),
    57: ("memory", "", "", False, "Legacy frame-buffer link training code, 'Unused' on Ampere+"),
    58: ("memory", "", "", False, "Legacy frame-buffer memory code, 'Unused' on Ampere+"),
    60: ("driver", "", "", False, "SEC2 (video processor) exception"),
    61: ("hardware", "", "", False, "Legacy code; DCGM treats it as a THERMAL warning"),
    62: ("hardware", "", "", False, "Internal micro-controller (PMU) halt: reset the GPU"),
    63: (
        "memory",
        "",
        "monitor",
        False,
        "Ampere+: row remap pending (a GPU reset activates it); confirm against remapped_rows.pending",
    ),
    64: ("memory", "", "isolate", False, "Row remap / page retirement FAILURE: an RMA criterion"),
    65: ("hardware", "", "", False, "Legacy NVENC1 code, 'Unused' on Ampere+"),
    66: ("driver", "", "", False, "Illegal register access by the driver"),
    67: ("driver", "", "", False, "Illegal access by the driver"),
    68: ("hardware", "", "monitor", False, ""),
    69: ("driver", "", "monitor", False, ""),
    73: ("hardware", "", "", False, "Legacy code; DCGM treats it as an NVLINK warning"),
    74: (
        "nvlink",
        "",
        "",
        False,
        "Decode the 7 registers (WORKFLOW_NVLINK_ERR): benign bits and sympathetic 74s on healthy peers are not "
        "P1; hardware bits -> reseat the link; ECC/parity bits repeated -> vendor",
    ),
    78: ("driver", "", "", False, "vGPU start error: update software/firmware"),
    79: (
        "pcie",
        "",
        "",
        False,
        "Reboot the node; repeated -> inspect riser, slot, power and seating before replacing the GPU",
    ),
    80: ("pcie", "", "monitor", False, "Corrupted data sent to the GPU: application or PCIe"),
    81: ("hardware", "", "", False, "Legacy VGA subsystem code, 'Unused' on Ampere+"),
    92: ("memory", "", "", False, "Correctable; watch the trend"),
    93: ("hardware", "", "", False, "InfoROM wear limit (DCGM INFOROM warning)"),
    94: (
        "memory",
        "",
        "monitor",
        False,
        "Contained ECC error: only the affected application is killed; the GPU stays usable; check remapping",
    ),
    95: ("memory", "", "", False, "All applications on the GPU are affected; reset the GPU"),
    109: ("driver", "", "", False, "Context switch timeout: reset the GPU"),
    110: ("driver", "", "", False, "Security fault: reset the GPU"),
    119: ("driver", "", "", False, "GSP RPC timeout: reset the GPU; repeated -> reboot, then vendor"),
    120: ("driver", "", "", False, ""),
    121: ("hardware", "", "", False, ""),
    136: ("nvlink", "", "", False, "NVLink training failed: reset; repeated -> check the link signal integrity"),
    137: ("nvlink", "", "", False, "NVLink privilege error (XID_137_FLOW)"),
    140: ("memory", "", "", False, "Uncorrectable ECC error escaped containment: reset the GPU"),
    141: ("driver", "", "", False, ""),
    143: ("hardware", "", "", False, "GPU initialization error: reset; repeated -> vendor"),
    **{
        c: (
            "nvlink",
            "",
            "",
            False,
            "NVLink5: NVIDIA's decode sheet rates most sub-cases IGNORE; the Fatal ones RESET_GPU (escalated when the "
            "line says Fatal); some XID_154_EVAL (follow the Xid 154 recovery action)",
        )
        for c in range(144, 151)
    },
    151: ("driver", "", "", False, "Confidential computing key rotation error"),
    154: ("driver", "", "", False, "Informational: act on the NEW recovery action carried by the line"),
    155: ("nvlink", "", "", False, ""),
    156: ("memory", "", "", False, "Resource retirement: a GPU reset completes it"),
    157: ("memory", "", "", False, "Resource retirement failed (investigatory: contact support)"),
    158: ("hardware", "", "", False, ""),
    159: ("driver", "", "", False, "AWS: reset if UVM is in use"),
    160: ("driver", "", "", False, ""),
    161: ("driver", "", "", False, ""),
    162: ("power", "P3", "monitor", False, "No bucket in NVIDIA's sheet; informational (gpud Info)"),
    163: ("power", "P2", "monitor", False, "No bucket in NVIDIA's sheet; gpud flags a reboot"),
    164: ("power", "P3", "monitor", False, "No bucket in NVIDIA's sheet; informational (gpud Info)"),
    165: ("power", "P3", "monitor", False, "No bucket in NVIDIA's sheet; AWS isolates with STRICT_PSHC"),
    166: ("nvlink", "P2", "monitor", False, "No bucket in NVIDIA's sheet; a confidential-computing link setup fault"),
    167: (
        "pcie",
        "P1",
        "reboot",
        False,
        "No bucket in NVIDIA's sheet; a fatal PCIe timeout loses the GPU like Xid 79: reboot, then inspect the link",
    ),
    168: ("memory", "P2", "reboot", False, "No bucket in NVIDIA's sheet; AWS: BOOT_REATTEMPT_OR_ENABLE_ECC -> reboot"),
    169: (
        "hardware",
        "P1",
        "reset_gpu",
        False,
        "No bucket in NVIDIA's sheet; an internal micro-controller halt like Xid 62 (RESET_GPU)",
    ),
    170: ("nvlink", "P3", "monitor", False, "No bucket in NVIDIA's sheet; interrupt seen in CC mode"),
    171: ("memory", "P1", "reset_gpu", False, "Detail for Xid 48 (DRAM): follow WORKFLOW_XID_48"),
    172: ("memory", "P1", "reset_gpu", False, "Detail for Xid 48 (SRAM): follow WORKFLOW_XID_48"),
}

# Codes newer than the sheet above: not verified against NVIDIA's text here (see docs/checks.md); their own
# decision errs on the side of acting. code: (name, description, category, severity, action, note)
_NEWER: Dict[int, Tuple[str, str, str, str, str, str]] = {
    173: (
        "XID_173",
        "Xid 173 (newer than the recorded catalog)",
        "hardware",
        "P1",
        "reset_gpu",
        "Not in the 2025-10-29 sheet: look it up in NVIDIA's current catalog; treated as RESET_GPU until then",
    ),
    185: (
        "XID_185",
        "Xid 185 (newer than the recorded catalog)",
        "unknown",
        "P2",
        "monitor",
        "Not in the 2025-10-29 sheet: look it up in NVIDIA's current catalog",
    ),
}

# What other tools do, from health-policy-facts.md section 4:
# code: (DCGM health, k8s-device-plugin, gpud, GCM, Azure NHC, AWS suite, imbue "hardware")
_TOOLS: Dict[int, Tuple[str, str, str, str, str, str, str]] = {
    8: ("-", "unhealthy", "W, none", "crit", "-", "-", "-"),
    13: ("-", "ignored", "W, CheckUserAppAndGPU", "non-crit", "-", "MONITOR", "-"),
    31: ("W (MEM)", "ignored", "W, CheckUserAppAndGPU -> HardwareInspection", "non-crit", "-", "MONITOR", "-"),
    32: ("W (MEM)", "unhealthy", "F, RebootSystem -> HardwareInspection", "crit", "-", "-", "-"),
    38: ("W (PCIE)", "unhealthy", "F, RebootSystem -> HardwareInspection", "crit", "-", "-", "-"),
    43: ("W (MEM)", "ignored", "W, CheckUserAppAndGPU", "non-crit", "-", "MONITOR", "-"),
    45: ("-", "ignored", "W, ignore", "non-crit", "-", "-", "-"),
    46: ("-", "unhealthy", "F, RebootSystem", "crit", "-", "-", "-"),
    48: ("F", "unhealthy", "F, RebootSystem -> HardwareInspection", "crit", "fail", "RESET (154 may escalate)", "yes"),
    54: ("W (POWER)", "unhealthy", "W", "crit", "-", "ISOLATE", "-"),
    56: ("W (POWER)", "unhealthy", "W", "crit", "fail", "-", "yes"),
    57: ("W (POWER)", "unhealthy", "W", "crit", "fail", "-", "yes"),
    58: ("W (POWER)", "unhealthy", "W", "crit", "fail", "-", "yes"),
    61: ("W (THERMAL)", "-", "-", "-", "-", "-", "-"),
    62: ("W (THERMAL)", "unhealthy", "F, RebootSystem -> HardwareInspection", "crit", "fail", "-", "yes"),
    63: ("W (MEM)", "unhealthy", "F, RebootSystem -> HardwareInspection", "non-crit", "fail", "MONITOR", "yes"),
    64: ("F (MEM)", "unhealthy", "F, RebootSystem -> HardwareInspection", "crit", "fail", "ISOLATE", "yes"),
    65: ("-", "-", "-", "-", "fail", "-", "-"),
    68: ("-", "ignored", "F, RebootSystem -> HardwareInspection", "non-crit", "fail", "-", "yes"),
    69: ("-", "unhealthy", "F, RebootSystem -> HardwareInspection", "crit", "fail", "-", "yes"),
    73: ("W (NVLINK)", "-", "-", "-", "fail", "-", "-"),
    74: ("F", "unhealthy", "F, RebootSystem -> HardwareInspection", "crit", "fail", "NVLINK_DEFAULT (RESET)", "yes"),
    79: ("F", "unhealthy", "F, RebootSystem -> HardwareInspection", "crit", "fail", "REBOOT", "yes"),
    80: ("-", "-", "-", "-", "fail", "-", "-"),
    81: ("-", "-", "-", "-", "fail", "-", "-"),
    92: ("-", "unhealthy", "W, ignore", "non-crit", "fail", "MONITOR", "yes"),
    93: ("W (INFOROM)", "-", "-", "-", "-", "-", "-"),
    94: ("W", "unhealthy", "F, RebootSystem (threshold 1000)", "crit", "- (GHR 2012)", "MONITOR", "yes"),
    95: (
        "F",
        "unhealthy",
        "F, RebootSystem -> HardwareInspection",
        "crit",
        "- (GHR 2011)",
        "RESET (A100 without MIG: REBOOT)",
        "yes",
    ),
    109: ("-", "ignored", "W", "non-crit", "-", "RESET", "-"),
    110: ("-", "unhealthy", "F, RebootSystem -> HardwareInspection", "crit", "-", "RESET", "yes"),
    119: ("F", "unhealthy", "F, RebootSystem -> HardwareInspection", "crit", "fail", "RESET", "yes"),
    120: ("F", "unhealthy", "F, RebootSystem -> HardwareInspection", "crit", "fail", "RESET", "yes"),
    121: ("W (NVLINK)", "unhealthy", "F, RebootSystem -> HardwareInspection", "crit", "-", "MONITOR", "-"),
    136: ("-", "unhealthy", "W", "crit", "-", "RESET", "-"),
    137: ("W (NVLINK)", "unhealthy", "W, CheckUserAppAndGPU", "crit", "-", "-", "-"),
    140: ("F", "unhealthy", "F, RebootSystem -> HardwareInspection", "crit", "-", "RESET", "-"),
    143: ("-", "unhealthy", "F, HardwareInspection", "crit", "-", "RESET", "-"),
    151: ("-", "unhealthy", "W, RebootSystem", "crit", "-", "REBOOT", "-"),
    154: (
        "-",
        "unhealthy",
        "W",
        "crit",
        "-",
        "MONITOR + 'Node Reboot Required' -> REBOOT, 'GPU Reset Required'/'Drain and Reset'/'Drain P2P' -> RESET",
        "-",
    ),
    155: ("-", "unhealthy", "W, RebootSystem", "crit", "-", "RESET", "-"),
    156: ("-", "unhealthy", "W, RebootSystem", "crit", "-", "RESET", "-"),
    157: ("-", "unhealthy", "-", "crit", "-", "-", "-"),
    158: ("-", "unhealthy", "W, RebootSystem", "crit", "-", "RESET", "-"),
    159: ("-", "unhealthy", "W", "crit", "-", "RESET if UVM in use", "-"),
    162: ("-", "unhealthy", "Info", "crit", "-", "MONITOR", "-"),
    163: ("-", "unhealthy", "W, RebootSystem", "crit", "-", "MONITOR", "-"),
    164: ("-", "unhealthy", "Info", "crit", "-", "MONITOR", "-"),
    165: ("-", "unhealthy", "Info", "crit", "-", "MONITOR (ISOLATE if STRICT_PSHC)", "-"),
    168: ("-", "unhealthy", "W", "crit", "-", "REBOOT", "-"),
    171: ("-", "unhealthy", "W", "crit", "-", "-", "-"),
    172: ("-", "unhealthy", "W, RebootSystem", "crit", "-", "-", "-"),
}
for _c in range(144, 151):
    _TOOLS[_c] = ("-", "unhealthy", "W, RebootSystem", "crit", "-", "NVLINK5_DEFAULT (MONITOR)", "-")

_TOOL_NAMES = ("dcgm_health", "k8s_device_plugin", "gpud", "gcm", "azure_nhc", "aws_suite", "imbue_hardware")

#: Sources that disagree (health-policy-facts.md "Disagreements to surface to users" and the table).
_DISAGREEMENTS: Dict[int, str] = {
    13: "Ignored by every tool, but NVIDIA's WORKFLOW_XID_13 wants repeats on the same TPC/GPC investigated",
    31: "Ignored by k8s-device-plugin/GCM; gpud escalates repeats to hardware inspection",
    32: "NVIDIA: RESTART_APP (mostly PCIe quality); gpud: reboot then hardware inspection; GCM/k8s-device-plugin: "
    "critical/unhealthy",
    38: "NVIDIA: IGNORE; gpud: reboot; k8s-device-plugin: unhealthy",
    63: "NVIDIA: IGNORE vs gpud: fatal/reboot vs k8s-device-plugin: unhealthy vs Azure NHC: fail; gpud ignores "
    "the Xid in favour of the NVML row-remapping state",
    64: "NVIDIA: RESET_GPU vs AWS suite: ISOLATE (RMA) vs gpud: reboot",
    74: "NVIDIA: WORKFLOW_NVLINK_ERR (decode the registers; benign and sympathetic bits) vs DCGM: FAIL on any 74 vs "
    "AWS: configurable NVLINK_DEFAULT",
    94: "NVIDIA: RESTART_APP vs k8s-device-plugin: unhealthy vs GCM: critical vs gpud: reboot after 1000",
    109: "NVIDIA: RESET_GPU vs k8s-device-plugin: ignored, gpud/GCM: warning only",
    144: "NVIDIA decode sheet: most sub-cases IGNORE, Fatal ones RESET_GPU vs gpud: reboot vs AWS: MONITOR",
    121: "NVIDIA: IGNORE vs gpud: reboot vs GCM: critical",
    137: "NVIDIA: IGNORE vs GCM: critical vs k8s-device-plugin: unhealthy",
}

#: NVLink5 lines carry a severity word: "Fatal" (the RESET_GPU sub-cases of NVIDIA's 144-150 decode) escalates.
_FATAL_ESCALATION = {c: {"severity": "P1", "action": "reset_gpu"} for c in range(144, 151)}

#: Codes beyond the catalogue (newer drivers): act soon and look them up. Every code of NVIDIA's sheet is
#: catalogued, so application/IGNORE codes never fall here, and 167/169/173 have their own P1 rows.
_UNKNOWN: Dict[str, Any] = {
    "code": None,
    "name": "UNKNOWN",
    "description": "Xid not in the catalogue",
    "category": "unknown",
    "nvidia_action": None,
    "nvidia_investigatory": None,
    "severity": "P2",
    "action": "monitor",
    "user_caused": False,
    "known": False,
    "sources": {},
    "source": "default for codes beyond the catalogue",
    "disagreements": None,
    "note": "Unknown code: look it up in NVIDIA's Xid catalog for this driver",
    "fatal_escalation": None,
}

_DEFAULT_CATEGORY = {"RESTART_APP": "driver", "IGNORE": "driver", "CONTACT_SUPPORT": "hardware"}


def _sheet() -> Dict[int, Tuple[str, str, str, str]]:
    out: Dict[int, Tuple[str, str, str, str]] = {}
    for line in NVIDIA_SHEET_TEXT.strip().splitlines():
        code, name, desc, imm, inv = line.split("|")
        out[int(code)] = (name, desc, imm, inv)
    return out


#: NVIDIA's sheet as data: code -> (mnemonic, description, immediate bucket, investigatory bucket).
NVIDIA_SHEET: Dict[int, Tuple[str, str, str, str]] = _sheet()


def _entry(code: int, name: str, desc: str, imm: str, inv: str) -> Dict[str, Any]:
    cat, sev, action, user, note = _OURS.get(code, (_DEFAULT_CATEGORY.get(imm, "hardware"), "", "", False, ""))
    bucket = BUCKETS.get(imm)
    if bucket:
        sev, action = sev or bucket[0], action or bucket[1]
        source = "%s: %s -> %s (BUCKETS)" % (_SHEET, imm, sev)
    else:
        source = "%s: no bucket; own decision (%s %s)" % (_SHEET, sev, action)
    sources: Dict[str, str] = {"nvidia": "%s / %s" % (imm or "-", inv or "-")}
    sources.update(zip(_TOOL_NAMES, _TOOLS.get(code, ())))
    return {
        "code": code,
        "name": name,
        "description": desc,
        "category": cat,
        "nvidia_action": imm or None,
        "nvidia_investigatory": inv or None,
        "severity": sev,
        "action": action,
        "user_caused": user,
        "known": True,
        "sources": sources,
        "source": source,
        "disagreements": _DISAGREEMENTS.get(code),
        "note": note or None,
        "fatal_escalation": copy.deepcopy(_FATAL_ESCALATION.get(code)),
    }


def _build() -> Dict[int, Dict[str, Any]]:
    out = {code: _entry(code, *row) for code, row in NVIDIA_SHEET.items()}
    for code, (name, desc, cat, sev, action, note) in _NEWER.items():
        e = _entry(code, name, desc, "", "")
        e.update(category=cat, severity=sev, action=action, note=note, source="newer than %s: own decision" % _SHEET)
        out[code] = e
    return out


#: The catalogue: int code -> entry (see the module docstring for the keys).
CATALOG: Dict[int, Dict[str, Any]] = _build()

USER_CAUSED = frozenset(code for code, entry in CATALOG.items() if entry["user_caused"])


def lookup(code: Any) -> Dict[str, Any]:
    """The catalogue entry for ``code`` (int or numeric string), a copy. Unknown codes get a default entry."""
    try:
        key: Optional[int] = int(str(code).strip())
    except (TypeError, ValueError):
        key = None
    if key is not None and key in CATALOG:
        return copy.deepcopy(CATALOG[key])
    entry = copy.deepcopy(_UNKNOWN)
    entry["code"] = key
    return entry


def recovery_action_name(value: Any) -> Optional[str]:
    """Normalize a recovery action (``0x1``, ``1``, ``GPU Reset Required``, ``Drain and Reset``) to
    the gpu.recovery_action vocabulary, or None."""
    if value is None:
        return None
    s = str(value).strip()
    try:
        num = int(s, 16) if s.lower().startswith("0x") else int(s)
    except ValueError:
        num = None
    if num is not None:
        return RECOVERY_ACTIONS.get(num)
    t = s.lower()
    for words, name in (
        ("drain and reset", "drain_and_reset"),
        ("drain p2p", "drain_p2p"),
        ("imex", "recover_imex_domain"),
        ("bus reset", "bus_reset"),
        ("system reboot", "system_reboot"),
        ("node reboot", "node_reboot"),
        ("reboot", "node_reboot"),
        ("gpu reset", "gpu_reset"),
        ("flr", "gpu_reset"),
        ("reset", "gpu_reset"),
        ("none", "none"),
    ):
        if words in t:
            return name
    return None
