# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inspection reports: report.json (gpuops.report/v1), report.md, report.html and gpuops.prom.

Pure functions: a report dict in, text out. Controller side; no Ansible imports. report.json and gpuops.prom
are interfaces and are written here in code; report.md and report.html are rendered from Jinja2 templates
(``report_templates/report.md.j2`` and ``report.html.j2`` beside this file) that a site can override with a
directory of its own (``templates_dir``: the inspect role's ``inspect_report_templates``, see
roles/inspect/README.md "Report templates"). HTML is always autoescaped: evidence text is hostile.
"""

from __future__ import annotations

import os
import pathlib
import re
from typing import Any, Dict, Iterable, List, Optional

import jinja2

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _json, _runbooks
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import fleet_summary as _fleet_summary
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import SEVERITIES, severity_rank

SCHEMA = "gpuops.report/v1"
STATUSES = ("healthy", "degraded", "faulty", "unreachable", "error")
#: The templates shipped with the collection; a site directory given as ``templates_dir`` is searched first.
DEFAULT_TEMPLATES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "report_templates")
MARKDOWN_TEMPLATE = "report.md.j2"
HTML_TEMPLATE = "report.html.j2"


def worst_severity(findings: Iterable[Dict[str, Any]]) -> Optional[str]:
    """The most urgent severity among findings (P0 first), or None."""
    best = None
    for f in findings:
        sev = f.get("severity")
        if sev in SEVERITIES and (best is None or severity_rank(sev) < severity_rank(best)):
            best = sev
    return best


def _runbook_linker(catalog: Optional[Dict[str, Any]]) -> Any:
    """finding -> a copy with ``runbook`` and ``runbook_link`` (see build_report)."""
    data = _runbooks.load_cached(_runbooks.DEFAULT_CATALOG) if catalog is None else catalog
    runbooks_dir = os.path.join(_runbooks.COLLECTION_ROOT, "runbooks")

    def link(finding: Dict[str, Any]) -> Dict[str, Any]:
        return dict(finding, **_runbooks.finding_runbook(data, finding, runbooks_dir))

    return link


def build_report(
    generated_at: str,
    nodes: Dict[str, Dict[str, Any]],
    cluster_findings: List[Dict[str, Any]],
    policy_version: str,
    policy_hash: Optional[str] = None,
    include_facts: bool = True,
    catalog: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """Assemble report.json.

    ``nodes`` maps inventory hostname -> {status, findings, facts?, rack?, leaf?, power?, policy_hash?, mode?}.
    Every finding gains ``runbook`` (the catalogue entry id that handles it, or None) and ``runbook_link`` (its
    runbook section, relative to the collection root), from ``catalog`` (default: the runbooks/catalog.yml the
    collection ships; ``_runbooks.finding_runbook``).
    """
    link = _runbook_linker(catalog)
    cluster_findings = [link(f) for f in cluster_findings]
    status_counts = dict.fromkeys(STATUSES, 0)
    sev_counts = dict.fromkeys(SEVERITIES, 0)
    out_nodes: Dict[str, Any] = {}
    for host in sorted(nodes):
        n = nodes[host]
        findings = [link(f) for f in n.get("findings") or []]
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
    report = {
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
    # the fleet checkup reads the facts even when report.json leaves them out; the store part (open incidents,
    # recurring faults of the period) is merged in by whoever holds the store (_fleet_summary.store_section)
    with_facts = {h: dict(n, facts=(nodes[h] or {}).get("facts")) for h, n in out_nodes.items()}
    report["fleet_summary"] = _fleet_summary.fleet_summary(dict(report, nodes=with_facts))
    return report


def to_json(report: Dict[str, Any], facts: bool = True) -> str:
    # compact on purpose: with indent, json falls back to its pure-Python encoder (8x slower on 1,000 nodes);
    # the nodes' whole facts from _facts_cache.NodeFacts (iter_json)
    return "".join(iter_json(report, facts=facts))


def facts_json(facts: Any) -> str:
    """A node's facts as JSON text: the whole facts of a ``_facts_cache.NodeFacts`` (their text as it is), else
    the value encoded (report.json's encoding: sorted keys, compact)."""
    full = getattr(facts, "full", None)
    if full is None:
        return _json.dumps(facts)
    return full if isinstance(full, str) else _json.dumps(full)


def _node_json(node: Any, facts: bool = True) -> str:
    """A node entry's JSON; its facts whole when the entry holds ``_facts_cache.NodeFacts``: their JSON text is
    put in as it is at the key's place (the entry's keys are strings, encoded in sorted order as
    ``json.dumps(sort_keys=True)`` does: the same bytes as encoding the decoded facts). ``facts=False``: the
    entry without its facts (they are in the side file, ``report_files``)."""
    if not isinstance(node, dict):
        return _json.dumps(node)
    if not facts and "facts" in node:
        node = {k: v for k, v in node.items() if k != "facts"}
    value = node.get("facts")
    if getattr(value, "full", None) is None or not all(isinstance(k, str) for k in node):
        return _json.dumps(node)
    parts = []
    for key in sorted(node):
        parts.append("%s:%s" % (_json.dumps(key), facts_json(value) if key == "facts" else _json.dumps(node[key])))
    return "{%s}" % ",".join(parts)


def iter_json(report: Dict[str, Any], facts: bool = True) -> Iterable[str]:
    """:func:`to_json` in pieces, one per node: the same bytes, without holding the whole text (issue 17). Each
    piece is ``json.dumps(sort_keys=True, separators=(",", ":"), default=str)``'s, made by :mod:`_json`.
    ``facts=False``: the node entries without their facts (report.json beside a facts side file, issue 41)."""
    sep = "{"
    for key in sorted(report):
        value = report[key]
        head = "%s%s:" % (sep, _json.dumps(key))
        sep = ","
        if key != "nodes" or not isinstance(value, dict) or not value:
            yield head + _json.dumps(value)
            continue
        inner = "{"
        for host in sorted(value):
            yield "%s%s%s:%s" % (head, inner, _json.dumps(host), _node_json(value[host], facts))
            head, inner = "", ","
        yield "}"
    yield "}\n" if sep == "," else "{}\n"


# ---------------------------------------------------------------------------------------------- Prometheus
def _label(value: Any) -> str:
    s = "" if value is None else str(value)
    return s.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


#: A finding code that may be a label value: an enumerated code (lowercase identifier, an upper-case state such as
#: an IB port's DOWN, or a number such as an Xid). Anything else (BMC event and sensor texts) is free text.
_PROM_CODE = re.compile(r"[a-z][a-z0-9_]{0,39}|[A-Z][A-Z0-9_]{0,19}|[0-9]{1,6}")


def prom_code(code: Any) -> str:
    """The ``code`` label of gpuops_finding: the code when it is enumerated, "other" for free text, "" for none.

    Label values must be bounded (each distinct value is a new series): free text goes to report.json only.
    """
    if code is None:
        return ""
    return str(code) if _PROM_CODE.fullmatch(str(code)) else "other"


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
            key = (f.get("check"), f.get("component"), prom_code(f.get("code")), f.get("severity"), f.get("action"))
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
    service = report.get("service")
    if isinstance(service, dict):  # the ledger's open incidents (docs/service.md): bounded labels
        clocks = service.get("sla_clocks") or []
        keys = [
            'incident="%s",severity="%s",clock="%s"' % tuple(_label(c[k]) for k in ("incident", "severity", "clock"))
            for c in clocks
        ]
        metric(
            "gpuops_incident_sla_seconds_remaining",
            "gauge",
            "Seconds until an open incident's SLA clock is due (negative: late).",
            ["gpuops_incident_sla_seconds_remaining{%s} %.0f" % (k, c["remaining_s"]) for k, c in zip(keys, clocks)],
        )
        metric(
            "gpuops_incident_sla_breached",
            "gauge",
            "1 when an open incident's SLA clock is breached, else 0.",
            ["gpuops_incident_sla_breached{%s} %d" % (k, 1 if c["breached"] else 0) for k, c in zip(keys, clocks)],
        )
    if generated_ts is not None:
        metric(
            "gpuops_inspection_timestamp_seconds",
            "gauge",
            "When the inspection ran (Unix time).",
            ["gpuops_inspection_timestamp_seconds %.0f" % generated_ts],
        )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------- templates
class ReportTemplateError(ValueError):
    """A report template is missing or does not render (the message names the template)."""


#: What a Markdown renderer would read as markup in finding text: raw HTML and autolinks (<, >), code spans
#: (backtick), links and images ([, ]), emphasis (*), table cells (|) and the escape character itself.
_MD_SPECIAL = re.compile(r"([\\`*\[\]<>|])")
#: Control characters (C0 but tab/newline, DEL, C1) and invisible or direction-changing Unicode (zero-width,
#: line/paragraph separators, bidi embeddings/overrides/isolates, BOM): shown as \xNN / \uNNNN, never passed on.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def _visible(ch: str) -> str:
    code = ord(ch)
    return "\\x%02x" % code if code < 0x100 else "\\u%04x" % code


def _md_cell(value: Any) -> str:
    """One Markdown table cell (or inline text) from untrusted text: None is empty; line breaks and tabs become
    spaces; Markdown/HTML syntax characters are backslash-escaped (CommonMark: shown literally, so no raw HTML,
    link or code span passes through); control and invisible characters are shown as ``\\xNN``/``\\uNNNN``."""
    text = "" if value is None else str(value)
    text = " ".join(text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", " ").split("\n"))
    return _CONTROL.sub(lambda m: _visible(m.group(0)), _MD_SPECIAL.sub(r"\\\1", text))


def environment(templates_dir: Optional[str] = None) -> jinja2.Environment:
    """The Jinja2 environment for the reports: ``templates_dir`` (a site's overrides) first, then the defaults.

    Every ``*.html.j2`` template is autoescaped; Markdown templates use the ``md`` filter for table cells.
    """
    site = os.path.abspath(templates_dir) if templates_dir else None
    if site and not os.path.isdir(site):
        raise ReportTemplateError("report templates directory %s does not exist" % site)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([site, DEFAULT_TEMPLATES] if site else [DEFAULT_TEMPLATES]),
        autoescape=lambda name: bool(name) and name.endswith(".html.j2"),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["md"] = _md_cell
    return env


def _where(n: Dict[str, Any]) -> str:
    """Rack, leaf and power domain of a node; for a capture also the time its evidence was judged at."""
    where = ", ".join("%s %s" % (k, n[k]) for k in ("rack", "leaf", "power") if n.get(k))
    if n.get("mode") == "capture" and n.get("evidence_time"):
        when = "evidence time %s (%s)" % (n["evidence_time"], n.get("evidence_time_source") or "unknown source")
        where = "%s; %s" % (where, when) if where else when
    if n.get("stale_evidence"):
        where = "%s; %s" % (where, n["stale_evidence"]) if where else n["stale_evidence"]
    if n.get("slurm_node_name"):
        name = "Slurm record NodeName=%s" % n["slurm_node_name"]
        where = "%s; %s" % (where, name) if where else name
    return where


def _attention(report: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Nodes that are not healthy or carry findings, worst first; each with its findings, worst first."""
    bad = [(h, n) for h, n in sorted(report["nodes"].items()) if n["status"] != "healthy" or n["findings"]]
    bad.sort(key=lambda hn: (severity_rank(hn[1]["severity"]), hn[0]))
    return [
        {
            "host": host,
            "node": n,
            "where": _where(n),
            "findings": sorted(n["findings"], key=lambda f: (severity_rank(f.get("severity")), f.get("check") or "")),
        }
        for host, n in bad
    ]


def _racks(report: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The rack-by-node grid: racks sorted by name, each with its nodes (host, node, hover title, full name as the
    label), its counts by status and ``open`` (some node is not healthy: the HTML shows it expanded)."""
    racks: Dict[str, List[str]] = {}
    for host, n in report["nodes"].items():
        racks.setdefault(n.get("rack") or "(no rack)", []).append(host)
    out = []
    for rack in sorted(racks):
        cells = []
        counts = dict.fromkeys(STATUSES, 0)
        for host in sorted(racks[rack]):
            n = report["nodes"][host]
            counts[n["status"]] = counts.get(n["status"], 0) + 1
            title = "%s: %s" % (host, n["status"])
            if n["findings"]:
                title += " - " + "; ".join(sorted({str(f.get("check")) for f in n["findings"]}))
            if n.get("stale_evidence"):
                title += " (%s)" % n["stale_evidence"]
            cells.append({"host": host, "node": n, "title": title, "label": host})
        bad = len(cells) - counts.get("healthy", 0)
        out.append({"name": rack, "nodes": cells, "counts": counts, "open": bad > 0, "not_healthy": bad})
    return out


def _findings_table(report: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Every finding (cluster findings first, then per node), worst first: the rows the HTML filters and sorts."""
    rows = [
        {"host": None, "rack": None, "status": "cluster", "finding": f} for f in report["summary"]["cluster_findings"]
    ]
    for host, n in sorted(report["nodes"].items()):
        rows += [{"host": host, "rack": n.get("rack"), "status": n["status"], "finding": f} for f in n["findings"]]
    for row in rows:
        row["rank"] = severity_rank(row["finding"].get("severity"))
    rows.sort(key=lambda r: (r["rank"], r["host"] is not None, r["host"] or "", str(r["finding"].get("check"))))
    return rows


def view(report: Dict[str, Any], max_nodes: int = 200, runbook_base: str = "") -> Dict[str, Any]:
    """What a report template sees (documented in roles/inspect/README.md "Report templates")."""
    attention = _attention(report)
    listed = {a["host"] for a in attention}
    findings = _findings_table(report)
    return {
        "report": report,
        "summary": report["summary"],
        "policy": report["policy"],
        "statuses": STATUSES,
        "severities": SEVERITIES,
        "attention": attention,
        "healthy": [
            {
                "host": h,
                "node": n,
                "where": ", ".join("%s %s" % (k, n[k]) for k in ("rack", "leaf", "power") if n.get(k)),
            }
            for h, n in sorted(report["nodes"].items())
            if h not in listed
        ],
        "findings": findings,
        "checks": sorted({str(r["finding"].get("check")) for r in findings}),
        "rack_names": sorted({r["rack"] for r in findings if r["rack"]}),
        "runbook_base": runbook_base,
        "max_nodes": max_nodes,
        "racks": _racks(report),
    }


def render(
    name: str,
    report: Dict[str, Any],
    templates_dir: Optional[str] = None,
    max_nodes: int = 200,
    runbook_base: str = "",
) -> str:
    """Render report template ``name`` (site directory first, then the collection's default)."""
    try:
        template = environment(templates_dir).get_template(name)
        return template.render(view(report, max_nodes=max_nodes, runbook_base=runbook_base))
    except jinja2.TemplateError as exc:
        where = getattr(exc, "filename", None) or name
        raise ReportTemplateError("report template %s: %s" % (where, exc)) from exc


def to_markdown(
    report: Dict[str, Any], max_nodes: int = 200, templates_dir: Optional[str] = None, runbook_base: str = ""
) -> str:
    """Ticket-ready summary: counts, cluster findings, then each non-healthy node with its findings.

    Each finding names its runbook (id and section, ``runbook_link`` relative to the collection root; with
    ``runbook_base``, e.g. the URL of the site's copy of the collection, a Markdown link to base + link)."""
    return render(MARKDOWN_TEMPLATE, report, templates_dir, max_nodes=max_nodes, runbook_base=runbook_base)


#: Where report.html's runbook links point by default: the runbooks of the collection that wrote it.
DEFAULT_RUNBOOK_BASE = pathlib.Path(_runbooks.COLLECTION_ROOT).as_uri() + "/"


def to_html(report: Dict[str, Any], templates_dir: Optional[str] = None, runbook_base: Optional[str] = None) -> str:
    """One self-contained HTML file (no external assets; inline CSS and script): counts, rack-by-node grid, every
    finding in one table that sorts, filters and searches (with JavaScript; readable without it), each finding
    linked to its runbook section (``runbook_base`` + ``runbook_link``; default: this collection's runbooks as
    file:// URLs), and a section per node (healthy nodes collapsed) for every grid cell to point at."""
    base = DEFAULT_RUNBOOK_BASE if runbook_base is None else runbook_base
    return render(HTML_TEMPLATE, report, templates_dir, runbook_base=base)
