# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a Slurm drain/down reason means: its cause and the next step (docs/checks.md, scheduler.node_state).

``interpret_reason(reason)`` -> ``{cause, next_step, source, key}`` for the reasons slurmctld itself sets (the
texts of Slurm's source, ``src/slurmctld/node_mgr.c``, ``node_scheduler.c``, ``job_mgr.c``, ``gres.c``, as the
Slurm FAQ and ``scontrol`` man page describe them) and the prefixes of the health-check tools that drain
nodes (LBNL NHC, gpuops itself, DCGM/NVSentinel-style health checks, operators' ticket ids). ``None`` for a
reason nobody here knows. The reason is data: it is matched, never templated or executed.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Pattern, Tuple

_SLURM_DOCS = "https://slurm.schedmd.com/"

#: (key, pattern matched against the reason without its ``[user@time]`` stamp, cause, next step, source)
_TABLE: List[Tuple[str, Pattern[str], str, str, str]] = [
    (
        "kill_task_failed",
        re.compile(r"^kill task failed", re.I),
        "a job step's processes could not be killed within UnkillableStepTimeout: an unkillable (D-state) process, "
        "typically a hung GPU/driver (check the kernel log for Xid 79/119/154), a hung storage mount (NFS/Lustre) "
        "or a stuck I/O",
        "look for processes in D state and still on the GPUs (nvidia-smi, ps -eo stat,pid,cmd | grep '^D'), the "
        "kernel log for Xids and hung-task traces and the mounts; a node with a hung GPU or mount needs a reboot "
        "before it is resumed",
        _SLURM_DOCS + "slurm.conf.html#OPT_UnkillableStepTimeout",
    ),
    (
        "not_responding",
        re.compile(r"^not responding", re.I),
        "slurmctld got no answer from slurmd for SlurmdTimeout: the node is down, hung, out of memory, off the "
        "network, or slurmd stopped",
        "check that the node answers (ping, BMC power state, console); then slurmd (systemctl status slurmd, "
        "its log) and munge; resume once slurmd registers again",
        _SLURM_DOCS + "slurm.conf.html#OPT_SlurmdTimeout",
    ),
    (
        "unexpected_reboot",
        re.compile(r"^node unexpectedly rebooted", re.I),
        "slurmd registered with a boot time later than the last one while ReturnToService did not allow an "
        "automatic return: a crash, a watchdog or BMC reset, a power event, or a reboot outside Slurm",
        "find out why it rebooted (journalctl -b -1, the BMC SEL, kernel panics, Xids before the reboot); "
        "resume only when the cause is known",
        _SLURM_DOCS + "faq.html#reboot",
    ),
    (
        "reboot_timed_out",
        re.compile(r"^reboot timed out", re.I),
        "a reboot requested through Slurm (scontrol reboot) did not bring slurmd back within ResumeTimeout",
        "check the console/BMC: the node hangs in firmware, POST or boot, or slurmd fails to start after boot",
        _SLURM_DOCS + "scontrol.html#OPT_reboot",
    ),
    (
        "reboot_requested",
        re.compile(r"^reboot (asap|requested|issued)", re.I),
        "a reboot was requested through Slurm (scontrol reboot [ASAP]) and is pending",
        "nothing to do unless it stays here: the node returns after the reboot (or with nextstate)",
        _SLURM_DOCS + "scontrol.html#OPT_reboot",
    ),
    (
        "prolog_error",
        re.compile(r"^prolog (error|failed)", re.I),
        "the node's Prolog (or PrologSlurmctld) script exited non-zero: Slurm drains the node and requeues the "
        "job; often a health check inside the prolog or a missing mount/device",
        "read the slurmd log for the prolog's output and exit status, run the prolog by hand on the node, fix "
        "what it found; then resume",
        _SLURM_DOCS + "prolog_epilog.html",
    ),
    (
        "epilog_error",
        re.compile(r"^epilog (error|failed)", re.I),
        "the node's Epilog script exited non-zero after a job: cleanup failed (processes left, GPUs still busy, "
        "a mount or a reset that failed)",
        "read the slurmd log for the epilog's output, check for leftover processes on the GPUs; then resume",
        _SLURM_DOCS + "prolog_epilog.html",
    ),
    (
        "low_memory",
        re.compile(r"^low real_?memory", re.I),
        "slurmd reported less memory than RealMemory in slurm.conf: a DIMM failed or is disabled, memory was "
        "reserved (hugepages, kdump), or the configured value is too high",
        "compare slurmd -C with slurm.conf and free -m; check the BMC/EDAC for failed DIMMs; fix the hardware or "
        "the configuration, then resume",
        _SLURM_DOCS + "slurm.conf.html#OPT_RealMemory",
    ),
    (
        "low_cpus",
        re.compile(r"^low (socket\*core\*thread count|cpus|tmpdisk)", re.I),
        "slurmd reported fewer CPUs (or less TmpDisk) than slurm.conf: CPUs offline, SMT or a BIOS setting "
        "changed, a disk missing, or the configuration is wrong",
        "compare slurmd -C and lscpu/df with slurm.conf; fix BIOS/hardware or the configuration, then resume",
        _SLURM_DOCS + "slurm.conf.html#OPT_CPUs",
    ),
    (
        "gres_count_low",
        re.compile(r"gres/gpu count (reported )?(is )?lower than configured|gres/gpu.*count too low", re.I),
        "slurmd found fewer GPUs than gres.conf/slurm.conf configure: a GPU fell off the bus or failed to "
        "initialise (Xid 79, RmInitAdapter), the driver did not load, or gres.conf is wrong",
        "run nvidia-smi -L and check the kernel log for Xid 79/RmInitAdapter; a missing GPU needs a reset or "
        "reboot (then replacement if it stays missing); fix gres.conf if the hardware is fine",
        _SLURM_DOCS + "gres.html",
    ),
    (
        "gres_count_changed",
        re.compile(r"gres/\S+ count (changed|too high)|invalid gres|gres.*(mismatch|not found)", re.I),
        "the generic resources slurmd reports do not match the configuration",
        "compare slurmd -G with gres.conf and slurm.conf, then restart slurmd and resume",
        _SLURM_DOCS + "gres.html",
    ),
    (
        "batch_job_failure",
        re.compile(r"^batch job complete failure", re.I),
        "slurmd could not launch or complete a batch job (spool directory, a full disk, a credential or a "
        "prolog problem) and drained the node to stop it eating more jobs",
        "read the slurmd log around the reason time, check /var/spool/slurmd and free disk space; then resume",
        _SLURM_DOCS + "slurm.conf.html#OPT_SlurmdSpoolDir",
    ),
    (
        "job_launch_failure",
        re.compile(r"^(job launch failure|launch failed requeued held|node failure)", re.I),
        "a job could not be started on the node (slurmd, credentials, cgroups or a prolog failed)",
        "read the slurmd log around the reason time; resume when a test job starts",
        _SLURM_DOCS + "troubleshoot.html",
    ),
    (
        "duplicate_jobid",
        re.compile(r"^duplicate jobid", re.I),
        "slurmd still runs a job slurmctld started again: the node's state and the controller's differ",
        "check the job on the node (scontrol listpids), kill leftovers; then resume",
        _SLURM_DOCS + "troubleshoot.html",
    ),
    (
        "health_check",
        re.compile(r"^(health ?check|healthcheckprogram)", re.I),
        "the site's HealthCheckProgram drained the node",
        "run the health check by hand on the node to see which test failed",
        _SLURM_DOCS + "slurm.conf.html#OPT_HealthCheckProgram",
    ),
    (
        "nhc",
        re.compile(r"^nhc\s*[:\[(]", re.I),
        "LBNL Node Health Check (NHC) failed a check on the node; the text after NHC: names it",
        "run nhc -v on the node to see the failing check; NHC resumes the node itself when it passes again "
        "(only if NHC drained it)",
        "https://github.com/mej/nhc",
    ),
    (
        "gpuops",
        re.compile(r"^gpuops\b", re.I),
        "gpuops.cluster drained the node for a finding (the reason names it)",
        "follow the finding's runbook; gpuops.cluster.resume releases the node when the fault has cleared",
        "docs/checks.md",
    ),
    (
        "gpu_health_tool",
        re.compile(r"^(dcgm|nvsentinel|gpud|xid\b|nvidia)", re.I),
        "a GPU health tool (DCGM, NVSentinel, gpud or a site Xid script) drained the node",
        "read that tool's report for the node; cross-check the gpu.* findings of this inspection",
        "https://docs.nvidia.com/deploy/xid-errors/",
    ),
]

#: an operator's own note: a ticket id (JIRA-style KEY-123, INC0012345, #1234) in a free-text reason
_TICKET = re.compile(r"(?<![\w-])([A-Z][A-Z0-9]*-\d{2,}|INC\d{5,}|RITM\d{5,}|#\d{3,})\b")
_STAMP = re.compile(r"\s*\[[^\]@]*@[^\]]*\]\s*$")


def interpret_reason(reason: Optional[str]) -> Optional[Dict[str, str]]:
    """``{key, cause, next_step, source}`` for a well-known Slurm drain/down reason, or None.

    The trailing ``[user@time]`` stamp of ``scontrol show node`` is ignored; matching is case-insensitive and
    anchored at the start for slurmctld's own texts. A free-text reason carrying a ticket id is an operator's
    (key ``operator``)."""
    if not isinstance(reason, str):
        return None
    text = _STAMP.sub("", reason.strip())[:500]
    if not text or text.lower() in ("none", "(null)", "n/a"):
        return None
    for key, rx, cause, step, source in _TABLE:
        if rx.search(text):
            return {"key": key, "cause": cause, "next_step": step, "source": source}
    m = _TICKET.search(text)
    if m:
        return {
            "key": "operator",
            "cause": "an operator drained the node by hand (ticket %s)" % m.group(1),
            "next_step": "follow ticket %s; resume when it is closed" % m.group(1),
            "source": "operator",
        }
    return None


def known_keys() -> List[str]:
    """The keys :func:`interpret_reason` can return (docs and tests)."""
    return [row[0] for row in _TABLE] + ["operator"]
