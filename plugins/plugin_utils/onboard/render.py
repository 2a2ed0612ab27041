# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node onboarding output: the Markdown sign-off report and the node_exporter textfile metrics of one record."""

from __future__ import annotations

import json
from typing import Any, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils import _timeutil
from ansible_collections.gpuops.cluster.plugins.plugin_utils.onboard.checks import _d, _fmt, _l, _n
from ansible_collections.gpuops.cluster.plugins.plugin_utils.onboard.record import STAGES

STAGE_TITLES = {
    "inventory": "1. Inventory vs hardware profile",
    "compliance": "2. Baseline compliance (driver / firmware versions)",
    "health": "3. Health inspection (no P0-P2 findings)",
    "burnin": "4. Burn-in (DCGM diag, NCCL, counter deltas)",
    "baseline": "5. Golden baseline saved",
    "service": "6. Entered service (Slurm, monitoring, sign-off)",
}


def prometheus_text(record: Any, now_ts: Optional[float] = None) -> str:
    """node_exporter textfile metrics for one node's onboarding record."""
    rec = _d(record)
    host = str(rec.get("host"))
    lines = [
        "# HELP gpuops_onboard_stage_passed Onboarding stage passed (1), failed (0); absent when not run.",
        "# TYPE gpuops_onboard_stage_passed gauge",
    ]
    for name in STAGES:
        st = _d(_d(rec.get("stages")).get(name))
        if st.get("status") in ("passed", "failed"):
            lines.append(
                'gpuops_onboard_stage_passed{host="%s",stage="%s"} %d' % (host, name, st["status"] == "passed")
            )
    lines += [
        "# HELP gpuops_onboard_accepted Node accepted into service by onboarding.",
        "# TYPE gpuops_onboard_accepted gauge",
        'gpuops_onboard_accepted{host="%s"} %d' % (host, rec.get("status") == "accepted"),
    ]
    for t in _l(_d(_d(_d(rec.get("stages")).get("burnin")).get("evidence")).get("nccl")):
        if isinstance(t, dict) and _n(t.get("busbw_gbps")) is not None:
            lines += (
                [
                    "# HELP gpuops_onboard_nccl_busbw_gbps NCCL all_reduce_perf bus bandwidth at burn-in.",
                    "# TYPE gpuops_onboard_nccl_busbw_gbps gauge",
                ]
                if not any("gpuops_onboard_nccl_busbw_gbps gauge" in ln for ln in lines)
                else []
            )
            lines.append(
                'gpuops_onboard_nccl_busbw_gbps{host="%s",test="%s"} %s' % (host, t.get("name"), _fmt(t["busbw_gbps"]))
            )
    ts = now_ts if now_ts is not None else _timeutil.utcnow().timestamp()
    lines += [
        "# HELP gpuops_onboard_timestamp_seconds When the onboarding record was last written.",
        "# TYPE gpuops_onboard_timestamp_seconds gauge",
        'gpuops_onboard_timestamp_seconds{host="%s"} %d' % (host, int(ts)),
    ]
    return "\n".join(lines) + "\n"


def render_signoff(record: Any) -> str:
    """Markdown sign-off report of one node: each stage, its verdict, evidence, who and when."""
    rec = _d(record)
    out = [
        "# Onboarding sign-off: %s" % rec.get("host"),
        "",
        "| | |",
        "|---|---|",
        "| node class | %s |" % rec.get("node_class"),
        "| status | **%s** |" % rec.get("status"),
        "| ticket | %s |" % (rec.get("ticket") or ""),
        "| started | %s |" % rec.get("started_at"),
        "| accepted | %s |" % (rec.get("accepted_at") or ""),
        "",
        "| stage | result | attempt | when | by |",
        "|---|---|---|---|---|",
    ]
    stages = _d(rec.get("stages"))
    for name in STAGES:
        st = _d(stages.get(name))
        out.append(
            "| %s | %s | %s | %s | %s |"
            % (
                STAGE_TITLES[name],
                st.get("status") or "not run",
                st.get("attempt") or "",
                st.get("at") or "",
                st.get("by") or "",
            )
        )
    for name in STAGES:
        st = _d(stages.get(name))
        if not st:
            continue
        out += ["", "## %s: %s" % (STAGE_TITLES[name], st.get("status"))]
        for p in _l(st.get("problems")):
            out.append("- FAIL: %s" % p)
        if st.get("remedy"):
            out.append("- remedy: `%s`" % st.get("remedy"))
        ev = st.get("evidence")
        if ev:
            out += ["", "```json", json.dumps(ev, indent=1, sort_keys=True, default=str)[:6000], "```"]
    return "\n".join(out) + "\n"
