# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rendering of the service report (``_service_report.compute``): service-report.json, .md and .html.

The HTML carries its charts as inline SVG drawn by matplotlib (Agg/SVG backends, no pyplot state, DejaVu Sans
which matplotlib ships): readable without a network or JavaScript. The SVG is deterministic (``svg.hashsalt``
per chart, no date in the metadata), so two renderings of the same report are identical. Text from the ledger
(causes, fixes, titles, domain names) is data: autoescaped in HTML, escaped in Markdown, and shown literally in
chart labels (matplotlib's mathtext ``$`` is escaped; the SVG writer escapes XML).

matplotlib is imported when charts are drawn, so the module loads without it (ansible-test's import test); a
controller without it gets "service report charts need matplotlib" at render time.
"""

from __future__ import annotations

import datetime
import io
import json
import os
from typing import Any, Dict, List, Optional

import jinja2

from ansible_collections.gpuops.cluster.plugins.module_utils._files import ensure_private_dir, write_private_atomic
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import report as _report
from ansible_collections.gpuops.cluster.plugins.plugin_utils.service.report import ServiceReportError

FILES = {"json": "service-report.json", "markdown": "service-report.md", "html": "service-report.html"}
MARKDOWN_TEMPLATE = "service_report.md.j2"
HTML_TEMPLATE = "service_report.html.j2"
SEVERITY_COLORS = {"P0": "#b00020", "P1": "#e65100", "P2": "#f9a825", "P3": "#607d8b"}
#: Nodes listed by name in the Markdown and HTML (worst availability first); report.json has every node.
MAX_NODES = 50
CHARTS = ("availability", "incidents", "sla", "mttr", "capacity")


def to_json(report: Dict[str, Any]) -> str:
    return json.dumps(report, sort_keys=True, indent=1, default=str) + "\n"


# ---------------------------------------------------------------------------------------------- charts
def _matplotlib() -> Any:
    try:
        import matplotlib  # pylint: disable=import-outside-toplevel
        from matplotlib.figure import Figure  # pylint: disable=import-outside-toplevel
    except ImportError:
        raise ServiceReportError(
            "service report charts need matplotlib on the controller (pip install matplotlib; it is in the "
            "collection's requirements.txt)"
        ) from None
    return matplotlib, Figure


def _label(text: Any) -> str:
    """Outside text as a literal chart label: no mathtext, bounded length."""
    s = "" if text is None else str(text)
    s = "".join(ch if ch.isprintable() else "?" for ch in s)[:40]
    return s.replace("\\", "\\\\").replace("$", r"\$")


def _dates(points: List[List[Any]]) -> List[datetime.datetime]:
    return [datetime.datetime.fromtimestamp(float(p[0]), tz=datetime.timezone.utc).replace(tzinfo=None) for p in points]


def _empty(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#666666")
    ax.set_xticks([])
    ax.set_yticks([])


def _date_axis(ax: Any) -> None:
    import matplotlib.dates as mdates  # pylint: disable=import-outside-toplevel

    locator = mdates.AutoDateLocator(minticks=3, maxticks=8)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))


def _chart_availability(ax: Any, report: Dict[str, Any]) -> None:
    points = [p for p in report["availability"]["trend"] if p[1] is not None]
    ax.set_title(
        "Availability (GPU-hours in service, %s)"
        % ("per day" if report["availability"]["trend_bucket_s"] <= 86400 else "per week")
    )
    if not points:
        _empty(ax, "no observed time in the period")
        return
    ax.plot(_dates(points), [p[1] for p in points], marker="o", color="#1565c0", linewidth=1.5)
    low = min(p[1] for p in points)
    ax.set_ylim(max(0.0, min(low - 1.0, 99.0)), 100.5)
    ax.set_ylabel("%")
    ax.grid(True, alpha=0.3)
    _date_axis(ax)


def _chart_incidents(ax: Any, report: Dict[str, Any]) -> None:
    ax.set_title("Incidents by domain and severity")
    by_domain = report["incidents"]["by_domain"]
    if not by_domain:
        _empty(ax, "no incidents in the period")
        return
    domains = sorted(by_domain, key=lambda d: (-sum(by_domain[d].values()), d))[:12]
    left = [0] * len(domains)
    ys = list(range(len(domains)))
    for sev, color in SEVERITY_COLORS.items():
        values = [by_domain[d].get(sev, 0) for d in domains]
        ax.barh(ys, values, left=left, color=color, label=sev)
        left = [a + b for a, b in zip(left, values)]
    ax.set_yticks(ys)
    ax.set_yticklabels([_label(d) for d in domains])
    ax.invert_yaxis()
    ax.set_xlabel("incidents")
    ax.legend(loc="lower right", fontsize=8)


def _chart_sla(ax: Any, report: Dict[str, Any]) -> None:
    ax.set_title("SLA compliance per severity (incidents with no breached clock)")
    by_sev = report["sla"]["by_severity"]
    sevs = [s for s in SEVERITY_COLORS if by_sev.get(s, {}).get("incidents")]
    if not sevs:
        _empty(ax, "no incidents in the period")
        return
    values = [by_sev[s]["compliance_pct"] for s in sevs]
    bars = ax.bar(sevs, values, color=[SEVERITY_COLORS[s] for s in sevs])
    for rect, sev in zip(bars, sevs):
        row = by_sev[sev]
        ax.annotate(
            "%d/%d" % (row["incidents"] - row["breached"], row["incidents"]),
            (rect.get_x() + rect.get_width() / 2, rect.get_height()),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    ax.set_ylim(0, 110)
    ax.set_ylabel("% compliant")


def _chart_mttr(ax: Any, report: Dict[str, Any]) -> None:
    ax.set_title("Mean time to restore (hours, by detection date)")
    points = report["mttr_trend"]
    if not points:
        _empty(ax, "no restored incidents in the period")
        return
    ax.plot(_dates(points), [p[1] for p in points], marker="s", color="#6a1b9a", linewidth=1.5)
    ax.set_ylabel("hours")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    _date_axis(ax)


def _chart_capacity(ax: Any, report: Dict[str, Any]) -> None:
    cap = report["capacity"]
    ax.set_title("Allocated GPU share against the expansion trigger")
    if not cap["series"]:
        _empty(ax, "no allocation samples in the period")
        return
    ax.plot(_dates(cap["series"]), [100.0 * p[1] for p in cap["series"]], color="#2e7d32", linewidth=1.2)
    ax.axhline(100.0 * cap["trigger"], color="#b00020", linestyle="--", linewidth=1.2)
    ax.annotate(
        "trigger %.0f %%" % (100.0 * cap["trigger"]),
        (0.01, 100.0 * cap["trigger"]),
        xycoords=("axes fraction", "data"),
        va="bottom",
        fontsize=8,
        color="#b00020",
    )
    ax.set_ylim(0, 105)
    ax.set_ylabel("% of GPUs allocated")
    ax.grid(True, alpha=0.3)
    _date_axis(ax)


_DRAW = {
    "availability": _chart_availability,
    "incidents": _chart_incidents,
    "sla": _chart_sla,
    "mttr": _chart_mttr,
    "capacity": _chart_capacity,
}


def charts(report: Dict[str, Any]) -> Dict[str, str]:
    """Each chart as an SVG document body (``<svg ...>...</svg>``), deterministic for the same report."""
    matplotlib, figure_cls = _matplotlib()
    out = {}
    for name in CHARTS:
        rc = {
            "svg.hashsalt": "gpuops-%s" % name,
            "svg.fonttype": "none",
            "font.family": "DejaVu Sans",
            "font.size": 9,
            "text.usetex": False,
        }
        with matplotlib.rc_context(rc):
            fig = figure_cls(figsize=(7.2, 3.0), dpi=100)
            ax = fig.add_subplot(1, 1, 1)
            _DRAW[name](ax, report)
            fig.tight_layout()
            buf = io.StringIO()
            fig.savefig(buf, format="svg", metadata={"Date": None})
        text = buf.getvalue()
        out[name] = text[text.index("<svg") :]
    return out


# ---------------------------------------------------------------------------------------------- Markdown / HTML
def _view(report: Dict[str, Any]) -> Dict[str, Any]:
    avail = report["availability"]
    nodes = sorted(
        ((h, v) for h, v in avail["nodes"].items()),
        key=lambda hv: (hv[1] is None, hv[1] if hv[1] is not None else 0.0, hv[0]),
    )
    return {
        "r": report,
        "nodes": nodes[:MAX_NODES],
        "nodes_total": len(nodes),
        "nodes_unobserved": sum(1 for _h, v in nodes if v is None),
        "max_nodes": MAX_NODES,
        "severities": list(SEVERITY_COLORS),
        "classes": sorted(set(report["mttr_h"]) | set(report["mtbf_h"])),
        "fmt": _fmt,
    }


def _fmt(value: Any, suffix: str = "") -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return ("%.3f" % value).rstrip("0").rstrip(".") + suffix
    return "%s%s" % (value, suffix)


def _render(name: str, context: Dict[str, Any]) -> str:
    try:
        return _report.environment().get_template(name).render(context)
    except jinja2.TemplateError as exc:  # a template bug must not become a traceback in the play
        raise ServiceReportError("service report template %s: %s" % (name, exc)) from exc


def to_markdown(report: Dict[str, Any]) -> str:
    return _render(MARKDOWN_TEMPLATE, _view(report))


def to_html(report: Dict[str, Any], svgs: Optional[Dict[str, str]] = None) -> str:
    import markupsafe  # pylint: disable=import-outside-toplevel

    svgs = charts(report) if svgs is None else svgs
    context = _view(report)
    context["charts"] = {
        k: markupsafe.Markup(v) for k, v in svgs.items()
    }  # drawn here; labels escaped by the SVG writer
    return _render(HTML_TEMPLATE, context)


def rendered(report: Dict[str, Any]) -> Dict[str, str]:
    """{kind: text} of the three files (charts drawn once); raises ServiceReportError before anything is written."""
    return {"json": to_json(report), "markdown": to_markdown(report), "html": to_html(report)}


def write(texts: Dict[str, str], report_dir: str) -> Dict[str, str]:
    """Write the rendered files privately (0600, atomically, never through a link) into ``report_dir`` (created
    0700 when missing); returns {kind: path}."""
    ensure_private_dir(report_dir)
    return {k: write_private_atomic(os.path.join(report_dir, FILES[k]), texts[k], 0o600) for k in FILES}
