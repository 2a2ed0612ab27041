# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inspection reports: report.json (gpuops.report/v1), report.md, report.html and gpuops.prom.

Pure functions: a report dict in, text out. Controller side; no Ansible imports.
"""

from __future__ import annotations

import html
import json
from typing import Any, Dict, Iterable, List, Optional

SCHEMA = "gpuops.report/v1"
STATUSES = ("healthy", "degraded", "faulty", "unreachable", "error")
SEVERITIES = ("P0", "P1", "P2", "P3")
_SEV_RANK = {s: i for i, s in enumerate(SEVERITIES)}


def worst_severity(findings: Iterable[Dict[str, Any]]) -> Optional[str]:
    """The most urgent severity among findings (P0 first), or None."""
    best = None
    for f in findings:
        sev = f.get("severity")
        if sev in _SEV_RANK and (best is None or _SEV_RANK[sev] < _SEV_RANK[best]):
            best = sev
    return best


def build_report(
    generated_at: str,
    nodes: Dict[str, Dict[str, Any]],
    cluster_findings: List[Dict[str, Any]],
    policy_version: str,
    policy_hash: Optional[str] = None,
    include_facts: bool = True,
) -> Dict[str, Any]:
    """Assemble report.json.

    ``nodes`` maps inventory hostname -> {status, findings, facts?, rack?, leaf?, power?, policy_hash?, mode?}.
    """
    status_counts = dict.fromkeys(STATUSES, 0)
    sev_counts = dict.fromkeys(SEVERITIES, 0)
    out_nodes: Dict[str, Any] = {}
    for host in sorted(nodes):
        n = nodes[host]
        findings = list(n.get("findings") or [])
        status = n.get("status") or "healthy"
        status_counts[status] = status_counts.get(status, 0) + 1
        for f in findings:
            if f.get("severity") in sev_counts:
                sev_counts[f["severity"]] += 1
        entry = {
            "status": status,
            "severity": worst_severity(findings),
            "findings": findings,
            "rack": n.get("rack"),
            "leaf": n.get("leaf"),
            "power": n.get("power"),
            "mode": n.get("mode"),
            "policy_hash": n.get("policy_hash"),
        }
        if include_facts:
            entry["facts"] = n.get("facts")
        out_nodes[host] = entry
    for f in cluster_findings:
        if f.get("severity") in sev_counts:
            sev_counts[f["severity"]] += 1
    return {
        "schema": SCHEMA,
        "generated_at": generated_at,
        "policy": {"version": policy_version, "hash": policy_hash},
        "summary": {
            "nodes": len(out_nodes),
            "status": status_counts,
            "severity": sev_counts,
            "cluster_findings": list(cluster_findings),
        },
        "nodes": out_nodes,
    }


def to_json(report: Dict[str, Any]) -> str:
    # compact on purpose: with indent, json falls back to its pure-Python encoder (8x slower on 1,000 nodes)
    return json.dumps(report, sort_keys=True, separators=(",", ":"), default=str) + "\n"


# ---------------------------------------------------------------------------------------------- Prometheus
def _label(value: Any) -> str:
    s = "" if value is None else str(value)
    return s.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def to_prometheus(report: Dict[str, Any], generated_ts: Optional[float] = None) -> str:
    """node_exporter textfile format. Every value here is derived from report.json (a test checks they agree)."""
    lines: List[str] = []

    def metric(name: str, mtype: str, help_text: str, samples: List[str]) -> None:
        lines.append("# HELP %s %s" % (name, help_text))
        lines.append("# TYPE %s %s" % (name, mtype))
        lines.extend(samples)

    summary = report["summary"]
    metric(
        "gpuops_nodes",
        "gauge",
        "Nodes inspected, by status.",
        ['gpuops_nodes{status="%s"} %d' % (s, summary["status"].get(s, 0)) for s in STATUSES],
    )
    metric(
        "gpuops_findings",
        "gauge",
        "Findings of the last inspection, by severity (cluster findings included).",
        ['gpuops_findings{severity="%s"} %d' % (s, summary["severity"].get(s, 0)) for s in SEVERITIES],
    )
    metric(
        "gpuops_cluster_findings",
        "gauge",
        "Cluster-level findings of the last inspection.",
        ["gpuops_cluster_findings %d" % len(summary["cluster_findings"])],
    )
    node_status: List[str] = []
    node_findings: List[str] = []
    finding_lines: List[str] = []
    for host, n in sorted(report["nodes"].items()):
        for s in STATUSES:
            node_status.append(
                'gpuops_node_status{node="%s",status="%s"} %d' % (_label(host), s, 1 if n["status"] == s else 0)
            )
        counts = dict.fromkeys(SEVERITIES, 0)
        for f in n["findings"]:
            if f.get("severity") in counts:
                counts[f["severity"]] += 1
        for s in SEVERITIES:
            node_findings.append(
                'gpuops_node_findings{node="%s",severity="%s"} %d' % (_label(host), s, int(counts[s] or 0))
            )
        seen = set()
        for f in n["findings"]:
            key = (f.get("check"), f.get("component"), f.get("code"), f.get("severity"), f.get("action"))
            if key in seen:
                continue
            seen.add(key)
            finding_lines.append(
                'gpuops_finding{node="%s",check="%s",component="%s",code="%s",severity="%s",action="%s"} 1'
                % tuple(_label(x) for x in (host,) + key)
            )
    metric("gpuops_node_status", "gauge", "1 for the node's current status, 0 for the others.", node_status)
    metric("gpuops_node_findings", "gauge", "Findings per node and severity.", node_findings)
    metric(
        "gpuops_finding",
        "gauge",
        "One series per active finding (check, component, code, severity, action).",
        finding_lines,
    )
    if generated_ts is not None:
        metric(
            "gpuops_inspection_timestamp_seconds",
            "gauge",
            "When the inspection ran (Unix time).",
            ["gpuops_inspection_timestamp_seconds %.0f" % generated_ts],
        )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------- Markdown
def _md_cell(value: Any) -> str:
    return str("" if value is None else value).replace("|", "\\|").replace("\n", " ")


def to_markdown(report: Dict[str, Any], max_nodes: int = 200) -> str:
    """Ticket-ready summary: counts, cluster findings, then each non-healthy node with its findings."""
    s = report["summary"]
    out = ["# GPU cluster inspection, %s" % report["generated_at"], ""]
    out.append(
        "%d nodes: " % s["nodes"]
        + ", ".join("%d %s" % (s["status"].get(k, 0), k) for k in STATUSES)
        + ". Findings: "
        + ", ".join("%s %d" % (k, s["severity"].get(k, 0)) for k in SEVERITIES)
        + "."
    )
    out.append("Policy %s (hash %s)." % (report["policy"].get("version"), (report["policy"].get("hash") or "")[:12]))
    out.append("")
    if s["cluster_findings"]:
        out.append("## Cluster findings")
        out.append("")
        out.append("| severity | check | domain | message | action | respond by |")
        out.append("|---|---|---|---|---|---|")
        for f in s["cluster_findings"]:
            out.append(
                "| %s |"
                % " | ".join(
                    _md_cell(f.get(k)) for k in ("severity", "check", "component", "message", "action", "respond_by")
                )
            )
        out.append("")
    bad = [(h, n) for h, n in report["nodes"].items() if n["status"] != "healthy" or n["findings"]]
    bad.sort(key=lambda hn: (_SEV_RANK.get(hn[1]["severity"] or "", 9), hn[0]))
    out.append("## Nodes needing attention")
    out.append("")
    if not bad:
        out.append("None: every node is healthy.")
    for host, n in bad[:max_nodes]:
        out.append("### %s: %s%s" % (host, n["status"], (" (worst %s)" % n["severity"]) if n["severity"] else ""))
        where = ", ".join("%s %s" % (k, n[k]) for k in ("rack", "leaf", "power") if n.get(k))
        if where:
            out.append("")
            out.append(where)
        out.append("")
        out.append("| severity | check | component | message | action | respond by |")
        out.append("|---|---|---|---|---|---|")
        for f in sorted(n["findings"], key=lambda f: (_SEV_RANK.get(f.get("severity") or "", 9), f.get("check") or "")):
            action = f.get("action")
            if f.get("cause"):
                action = "%s (cause: %s)" % (action, f["cause"])
            out.append(
                "| %s | %s | %s | %s | %s | %s |"
                % tuple(
                    _md_cell(x)
                    for x in (
                        f.get("severity"),
                        f.get("check"),
                        f.get("component"),
                        f.get("message"),
                        action,
                        f.get("respond_by"),
                    )
                )
            )
        out.append("")
    if len(bad) > max_nodes:
        out.append("... and %d more nodes (see report.json)." % (len(bad) - max_nodes))
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------- HTML
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.5em;color:#1d232a}
h1{font-size:1.4em} h2{font-size:1.15em;margin-top:1.6em}
.counts{display:flex;gap:.8em;flex-wrap:wrap}.count{padding:.5em .9em;border-radius:6px;background:#eef1f4}
.count b{font-size:1.3em;display:block}
.sev-P0{background:#7f1d1d;color:#fff}.sev-P1{background:#dc2626;color:#fff}.sev-P2{background:#f59e0b}
.sev-P3{background:#bfdbfe}
.grid{display:flex;flex-direction:column;gap:4px}.rack{display:flex;align-items:center;gap:4px}
.rack-name{width:9em;font-size:.85em;color:#555}
.cell{width:26px;height:26px;border-radius:4px;font-size:9px;display:flex;align-items:center;justify-content:center;
color:#111;text-decoration:none}
.status-healthy{background:#22c55e}.status-degraded{background:#f59e0b}.status-faulty{background:#dc2626;color:#fff}
.status-unreachable{background:#6b7280;color:#fff}.status-error{background:#a855f7;color:#fff}
table{border-collapse:collapse;margin:.4em 0 1em}td,th{border:1px solid #d0d7de;padding:3px 7px;font-size:.9em;
text-align:left;vertical-align:top}
.legend span{margin-right:1em}
"""


def to_html(report: Dict[str, Any]) -> str:
    """One self-contained HTML file (no external assets): counts, rack-by-node grid, findings per node."""
    e = html.escape
    s = report["summary"]
    parts = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        "<title>gpuops inspection %s</title><style>%s</style></head><body>" % (e(report["generated_at"]), _CSS),
        "<h1>GPU cluster inspection</h1><p>Generated %s, policy %s.</p>"
        % (e(report["generated_at"]), e(str(report["policy"].get("version")))),
        '<div class="counts" id="status-counts">',
    ]
    for st in STATUSES:
        parts.append(
            '<div class="count status-%s" data-status="%s"><b>%d</b>%s</div>' % (st, st, s["status"].get(st, 0), st)
        )
    parts.append('</div><div class="counts" id="severity-counts" style="margin-top:.6em">')
    for sev in SEVERITIES:
        parts.append(
            '<div class="count sev-%s" data-severity="%s"><b>%d</b>%s</div>'
            % (sev, sev, s["severity"].get(sev, 0), sev)
        )
    parts.append("</div>")
    if s["cluster_findings"]:
        parts.append(
            '<h2>Cluster findings</h2><table id="cluster-findings"><tr><th>severity</th><th>check</th>'
            "<th>domain</th><th>message</th><th>action</th><th>respond by</th></tr>"
        )
        for f in s["cluster_findings"]:
            parts.append(
                '<tr class="sev-%s">%s</tr>'
                % (
                    e(str(f.get("severity"))),
                    "".join(
                        "<td>%s</td>" % e(str(f.get(k) or ""))
                        for k in ("severity", "check", "component", "message", "action", "respond_by")
                    ),
                )
            )
        parts.append("</table>")
    # rack-by-node grid
    racks: Dict[str, List[str]] = {}
    for host, n in report["nodes"].items():
        racks.setdefault(n.get("rack") or "(no rack)", []).append(host)
    parts.append('<h2>Nodes by rack</h2><div class="legend">')
    parts.extend(
        '<span><span class="cell status-%s" style="display:inline-flex"></span> %s</span>' % (st, st) for st in STATUSES
    )
    parts.append('</div><div class="grid" id="rack-grid">')
    for rack in sorted(racks):
        parts.append('<div class="rack" data-rack="%s"><span class="rack-name">%s</span>' % (e(rack), e(rack)))
        for host in sorted(racks[rack]):
            n = report["nodes"][host]
            title = "%s: %s" % (host, n["status"])
            if n["findings"]:
                title += " - " + "; ".join(sorted({str(f.get("check")) for f in n["findings"]}))
            parts.append(
                '<a class="cell node-cell status-%s" data-node="%s" data-status="%s" href="#node-%s" title="%s">%s</a>'
                % (e(n["status"]), e(host), e(n["status"]), e(host), e(title), e(host[-2:]))
            )
        parts.append("</div>")
    parts.append("</div><h2>Findings per node</h2>")
    bad = [(h, n) for h, n in sorted(report["nodes"].items()) if n["findings"] or n["status"] != "healthy"]
    bad.sort(key=lambda hn: (_SEV_RANK.get(hn[1]["severity"] or "", 9), hn[0]))
    if not bad:
        parts.append("<p>Every node is healthy.</p>")
    for host, n in bad:
        parts.append(
            '<h3 id="node-%s">%s <span class="count status-%s">%s</span></h3>'
            % (e(host), e(host), e(n["status"]), e(n["status"]))
        )
        parts.append(
            '<table class="node-findings" data-node="%s"><tr><th>severity</th><th>check</th><th>component</th>'
            "<th>message</th><th>action</th><th>respond by</th></tr>" % e(host)
        )
        for f in sorted(n["findings"], key=lambda f: (_SEV_RANK.get(f.get("severity") or "", 9), f.get("check") or "")):
            action = str(f.get("action") or "")
            if f.get("cause"):
                action += " (cause: %s)" % f["cause"]
            parts.append(
                '<tr><td class="sev-%s">%s</td>%s<td>%s</td><td>%s</td></tr>'
                % (
                    e(str(f.get("severity"))),
                    e(str(f.get("severity"))),
                    "".join("<td>%s</td>" % e(str(f.get(k) or "")) for k in ("check", "component", "message")),
                    e(action),
                    e(str(f.get("respond_by") or "")),
                )
            )
        parts.append("</table>")
    parts.append("</body></html>\n")
    return "".join(parts)
