# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight's verdicts (``gpuops.cluster.preflight``, docs/inventory-plugin.md "Preflight"): what a first run
needs, one gap per missing item with its fix.

Inputs are what the playbook read, read-only: each sampled node's probe (one ``raw`` command: the effective uid and
``command -v`` of each tool, NVML), the Slurm controller's ``scontrol ping``, and on the controller the state
directory, the store, the audit callback's marker and the BMC settings. A gap is ``required`` (the run exits
non-zero) or ``recommended`` (a note: a feature is off until it is fixed). Pure: no Ansible imports, no I/O.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

REQUIRED, RECOMMENDED = "required", "recommended"

#: The node probe's shell command (POSIX sh, no Python needed): uid, one ``tool=path`` line per tool, NVML.
TOOLS = ("nvidia-smi", "ibstat", "ipmitool", "dcgmi", "mlxlink")
PROBE = (
    'echo uid=$(id -u); for t in %s; do echo "$t=$(command -v $t 2>/dev/null)"; done; '
    "for p in python3 /usr/bin/python3; do $p -c 'import pynvml' 2>/dev/null && { echo nvml=yes; break; }; done; true"
) % " ".join(TOOLS)

#: What each optional tool gives, and how to get it.
TOOL_FIX = {
    "ibstat": ("InfiniBand port state through ibstat (sysfs is read without it)", "install infiniband-diags"),
    "ipmitool": ("in-band BMC sensors, SEL and FRU", "install ipmitool"),
    "dcgmi": ("DCGM diagnostics (dcgm_level)", "install datacenter-gpu-manager and start nv-hostengine"),
    "mlxlink": ("transceiver and link-quality evidence (optics checks)", "install NVIDIA MFT (or mstflint's mstlink)"),
}
_LINE = re.compile(r"^([A-Za-z0-9_-]+)=(.*)$")


def parse_probe(stdout: Any) -> Dict[str, Any]:
    """``{"uid": int|None, "tools": {tool: path or None}, "nvml": bool}`` from the probe's output."""
    out: Dict[str, Any] = {"uid": None, "tools": {t: None for t in TOOLS}, "nvml": False}
    for line in str(stdout or "").splitlines():
        m = _LINE.match(line.strip())
        if not m:
            continue
        key, value = m.group(1), m.group(2).strip()
        if key == "uid" and value.isdigit():
            out["uid"] = int(value)
        elif key in out["tools"]:
            out["tools"][key] = value or None
        elif key == "nvml":
            out["nvml"] = value == "yes"
    return out


def _hosts(hosts: List[str], limit: int = 8) -> str:
    hosts = sorted(hosts)
    more = " and %d more" % (len(hosts) - limit) if len(hosts) > limit else ""
    return ", ".join(hosts[:limit]) + more


def _gap(level: str, item: str, what: str, fix: str, hosts: Optional[List[str]] = None) -> Dict[str, Any]:
    return {"level": level, "item": item, "what": what, "fix": fix, "hosts": sorted(hosts or [])}


def node_gaps(probes: Dict[str, Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Gaps of the sampled nodes. ``probes``: host -> the registered probe result (``unreachable``, ``failed``,
    ``msg``, ``stdout``)."""
    gaps: List[Dict[str, Any]] = []
    if not probes:
        what = "no live node to sample: gpuops_targets matches no host without gpuops_capture_dir"
        return [
            _gap(REQUIRED, "targets", what, "name live GPU nodes with -e gpuops_targets=PATTERN (default gpu_nodes)")
        ]
    unreachable, not_root, no_gpu_tool = {}, {}, []
    missing: Dict[str, List[str]] = {t: [] for t in TOOL_FIX}
    for host, res in sorted(probes.items()):
        res = res if isinstance(res, dict) else {}
        if res.get("unreachable") or res.get("failed") or res.get("rc") not in (0, None) or "stdout" not in res:
            unreachable[host] = " ".join(str(res.get("msg") or res.get("stderr") or "no answer").split())[:160]
            continue
        probe = parse_probe(res.get("stdout"))
        if probe["uid"] != 0:
            not_root[host] = probe["uid"]
        if not probe["tools"]["nvidia-smi"] and not probe["nvml"]:
            no_gpu_tool.append(host)
        for tool in TOOL_FIX:
            if not probe["tools"][tool]:
                missing[tool].append(host)
    if unreachable:
        first = next(iter(unreachable.values()))
        gaps.append(
            _gap(
                REQUIRED,
                "ssh",
                "SSH failed on %d sampled node(s): %s (%s)" % (len(unreachable), _hosts(list(unreachable)), first),
                "check ansible_host, ansible_user and the key with `ansible -m ansible.builtin.ping <node>`;"
                ' docs/inventory-plugin.md "User, become and forks"',
                list(unreachable),
            )
        )
    if not_root:
        uids = sorted({str(u) for u in not_root.values()})
        gaps.append(
            _gap(
                REQUIRED,
                "become",
                "not root on %d sampled node(s): %s (uid %s)"
                % (len(not_root), _hosts(list(not_root)), ", ".join(uids)),
                "connect as root or set ansible_become: true (passwordless sudo, or --ask-become-pass):"
                " the tools (ipmitool, dmesg, nvidia-smi -r) and drains need root",
                list(not_root),
            )
        )
    if no_gpu_tool:
        gaps.append(
            _gap(
                REQUIRED,
                "nvidia-smi",
                "no nvidia-smi on PATH and no NVML (pynvml) on %d sampled node(s): %s"
                % (len(no_gpu_tool), _hosts(no_gpu_tool)),
                "install the NVIDIA driver's nvidia-smi (on the PATH of the SSH user), or nvidia-ml-py for NVML",
                no_gpu_tool,
            )
        )
    for tool, hosts in missing.items():
        if hosts:
            gives, fix = TOOL_FIX[tool]
            gaps.append(
                _gap(
                    RECOMMENDED,
                    tool,
                    "no %s on %d sampled node(s): %s - %s is off" % (tool, len(hosts), _hosts(hosts), gives),
                    fix,
                    hosts,
                )
            )
    return gaps


def slurm_gaps(slurm: Dict[str, Any]) -> List[Dict[str, Any]]:
    """``slurm``: ``{host, scontrol_path, rc, stdout, stderr, msg}`` of ``scontrol ping`` on the Slurm controller host."""
    where = "%s on %s" % (slurm.get("scontrol_path") or "scontrol", slurm.get("host") or "localhost")
    text = "%s %s" % (slurm.get("stdout") or "", slurm.get("stderr") or "")
    said = " ".join((text.strip() or str(slurm.get("msg") or "")).split())[:200]
    rc = slurm.get("rc")
    if slurm.get("unreachable"):
        return [
            _gap(
                REQUIRED,
                "slurm_host",
                "the Slurm controller host is unreachable: %s" % said,
                "gpuops_slurm_controller.host must be an inventory host that Ansible reaches",
            )
        ]
    if rc is None or rc == 127 or "No such file" in said or "not found" in said.lower() and "scontrol" in said:
        return [
            _gap(
                REQUIRED,
                "slurm_client",
                "the Slurm client is missing: %s (%s)" % (where, said or "not run"),
                "install the Slurm client there or set gpuops_slurm_controller.scontrol_path",
            )
        ]
    up = re.search(r"\b(is|are) UP\b", text)
    if rc != 0 or not up:
        return [
            _gap(
                REQUIRED,
                "slurm_controller",
                "slurmctld does not answer `scontrol ping` (%s, rc %s): %s" % (where, rc, said),
                "start slurmctld or fix SlurmctldHost/munge on that host; drains and resumes go through it",
            )
        ]
    return []


def controller_gaps(c: Dict[str, Any]) -> List[Dict[str, Any]]:
    """``c``: ``audit`` (the callback's marker is live), ``state_dir``, ``state_dir_env`` (GPUOPS_STATE_DIR),
    ``state_dir_ok`` / ``state_dir_why``, ``db_url_set``, ``store_ok`` / ``store_why``, ``bmc`` (host ->
    ``{address, user, password}`` booleans)."""
    gaps: List[Dict[str, Any]] = []
    if not c.get("audit"):
        gaps.append(
            _gap(
                REQUIRED,
                "audit_callback",
                "the audit callback gpuops.cluster.audit is not enabled: disruptive playbooks refuse to act",
                "export ANSIBLE_CALLBACKS_ENABLED=gpuops.cluster.audit (or callbacks_enabled in ansible.cfg)",
            )
        )
    if not c.get("state_dir"):
        gaps.append(
            _gap(
                REQUIRED,
                "state_dir",
                "no state directory: escalation, locks, claims and the audit log are off",
                "export GPUOPS_STATE_DIR=/var/lib/gpuops (docs/state.md)",
            )
        )
    elif not c.get("state_dir_ok"):
        gaps.append(
            _gap(
                REQUIRED,
                "state_dir",
                "state directory %s: %s" % (c["state_dir"], c.get("state_dir_why") or "not writable"),
                "create it writable by the controller user: install -d -m 0700 %s" % c["state_dir"],
            )
        )
    elif not c.get("state_dir_env"):
        gaps.append(
            _gap(
                RECOMMENDED,
                "state_dir_env",
                "gpuops_state_dir is set but GPUOPS_STATE_DIR is not exported: the audit callback cannot see it",
                "export GPUOPS_STATE_DIR=%s" % c["state_dir"],
            )
        )
    if c.get("db_url_set") and not c.get("store_ok"):
        gaps.append(
            _gap(
                REQUIRED,
                "store",
                "the store (gpuops_db_url): %s" % (c.get("store_why") or "unreachable"),
                "fix gpuops_db_url or start the database (docs/store.md)",
            )
        )
    bmc = c.get("bmc") or {}
    no_creds = [h for h, b in bmc.items() if b.get("address") and not (b.get("user") and b.get("password"))]
    no_addr = [h for h, b in bmc.items() if not b.get("address")]
    if no_creds:
        gaps.append(
            _gap(
                REQUIRED,
                "bmc_credentials",
                "BMC address without credentials on %d sampled node(s): %s" % (len(no_creds), _hosts(no_creds)),
                "set gpuops_bmc_user / gpuops_bmc_password from a vault, or export GPUOPS_BMC_USER / GPUOPS_BMC_PASSWORD",
                no_creds,
            )
        )
    if no_addr:
        gaps.append(
            _gap(
                RECOMMENDED,
                "bmc_address",
                "no gpuops_bmc_address on %d sampled node(s): %s - out-of-band power (replace, leak response) is off"
                % (len(no_addr), _hosts(no_addr)),
                "set gpuops_bmc_address (and credentials) per node, e.g. compose it in the inventory source",
                no_addr,
            )
        )
    return gaps


def verdict(gaps: List[Dict[str, Any]], sampled: int, total: int) -> Dict[str, Any]:
    """``{passed, lines, summary, gaps}``: one line per gap, required first, each with its fix."""
    ordered = sorted(gaps, key=lambda g: (g["level"] != REQUIRED, g["item"]))
    lines = [
        "%s %s: %s. Fix: %s" % ("GAP " if g["level"] == REQUIRED else "note", g["item"], g["what"], g["fix"])
        for g in ordered
    ]
    required = sum(1 for g in ordered if g["level"] == REQUIRED)
    summary = "preflight: %s - %d required gap(s), %d note(s); %d of %d target node(s) sampled" % (
        "FAILED" if required else "green",
        required,
        len(ordered) - required,
        sampled,
        total,
    )
    return {"passed": required == 0, "summary": summary, "lines": lines, "gaps": ordered}
