# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every reader of JSON from outside refuses a document nested 100,000 deep with its ordinary error (issue 35).

Before, each of these let ``RecursionError`` out (it is no ValueError): a traceback, or a whole run stopped.
Now each reader goes through ``_safejson`` and gives what it gives for any bad document: a ParseError or an
error record naming the file, None, a StateError, a SliceError, a filter error.
"""

from __future__ import annotations

import json
import os
import zlib

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils import _http
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import (
    bmc as _bmc,
    capture as _capture,
    dcgm as _dcgm,
    platform as _platform,
)
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import storage_probe as _storage_probe
from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import sched as _sched_parse
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError

DEEP = "[" * 100000 + "]" * 100000
REFUSED = "nesting deeper than 64 levels"


def test_capture_meta(tmp_path):
    (tmp_path / "capture.json").write_text(DEEP)
    with pytest.raises(ParseError, match=REFUSED) as exc:
        _capture.load_meta(str(tmp_path))
    assert str(tmp_path / "capture.json") == exc.value.to_error("capture")["source"]
    errors = []
    assert _capture.meta_or_error(str(tmp_path), errors, "gpu") == {}
    assert errors[0]["domain"] == "gpu" and REFUSED in errors[0]["message"]


def test_capture_meta_never_raises(tmp_path, monkeypatch):
    """The meta read is inside the collector boundary: even a bug in it is an error record naming capture.json."""
    (tmp_path / "capture.json").write_text("{}")

    def boom(*_a, **_k):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(_capture, "safe_loads", boom)
    errors = []
    assert _capture.meta_or_error(str(tmp_path), errors, "capture") == {}
    assert errors[0]["kind"] == "internal" and "capture.json" in errors[0]["message"]


def test_dcgmi_json():
    with pytest.raises(ParseError, match=REFUSED):
        _dcgm.parse_diag('{"DCGM GPU Diagnostic": ' + DEEP + "}", "dcgmi-diag.txt")


@pytest.mark.parametrize("parse", [_sched_parse.parse_squeue_json, _sched_parse.parse_sacct_json])
def test_scheduler_json(parse):
    with pytest.raises(ParseError, match=REFUSED):
        parse('{"jobs": ' + DEEP + "}", "squeue.json")


def test_redfish_capture_file(tmp_path):
    path = tmp_path / "Systems.json"
    path.write_text(DEEP)
    result = {"errors": []}
    _bmc._capture_redfish_file(result, str(path))
    assert [e["source"] for e in result["errors"]] == [str(path)]
    assert REFUSED in result["errors"][0]["message"] and "Systems.json" in result["errors"][0]["message"]


def test_http_body_is_no_document():
    resp = _http.Response("https://bmc/redfish/v1", 200, {}, DEEP)
    assert resp.json is None
    assert _http.Response("https://bmc/redfish/v1", 200, {}, '{"a": [1]}').json == {"a": [1]}


def test_platform_meta(tmp_path):
    (tmp_path / "platform-meta.json").write_text('{"captured_at": 5, "x": ' + DEEP + "}")
    assert _platform._read_meta(str(tmp_path)) is None
    (tmp_path / "platform-meta.json").write_text('{"captured_at": 5}')
    assert _platform._read_meta(str(tmp_path)) == 5.0


def test_storage_probe(tmp_path):
    assert _storage_probe.parse_fio_write('fio: {"jobs": ' + DEEP + "}") is None
    path = tmp_path / "baseline.json"
    path.write_text('{"write_mib_s": ' + "[" * 20000 + "]" * 20000 + "}")
    errors = []
    assert _storage_probe.load_baseline(str(path), errors) is None
    assert errors and REFUSED in json.dumps(errors)


def test_runner_child_result():
    from ansible_collections.gpuops.cluster.plugins.module_utils import _runner

    out = _runner.run_in_child(_deep_result, timeout=30)
    assert out["ok"] is False and REFUSED in out["error"], out


def _deep_result():
    value = []
    for _level in range(200):
        value = [value]
    return value


# ----------------------------------------------------------------------------------------------- controller
def test_state_file(tmp_path):
    """An older collection's host state file is read once, by the store's import (state_store.import_state_files)."""
    pytest.importorskip("sqlalchemy")
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import (
        state as _state,
        state_store as _state_store,
    )

    (tmp_path / "hosts").mkdir()
    (tmp_path / "hosts" / "h1.json").write_text(DEEP)
    with pytest.raises(_state.StateError, match="old state file .*h1.json.*" + REFUSED):
        _state_store.open_state(state_dir=str(tmp_path))


def test_guard_history(tmp_path):
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.change import guard as _guard
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import state as _state

    (tmp_path / "isolation").mkdir()
    (tmp_path / "isolation" / "history.json").write_text('{"entries": ' + DEEP + "}")
    with pytest.raises(_state.StateError, match="isolation history.*" + REFUSED):
        _guard.load_history(str(tmp_path))


def test_store_row(tmp_path):
    pytest.importorskip("sqlalchemy")
    import sqlalchemy as sa

    from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import (
        state as _state,
        state_store as _state_store,
    )

    st = _state_store.open_state(str(tmp_path), "sqlite:///%s/s.db" % tmp_path)
    st.save_hosts({"h1": _state.empty_host_state("h1"), "h2": _state.empty_host_state("h2")})
    with st.store.begin() as conn:
        conn.execute(sa.text("UPDATE host_state SET doc = :d WHERE host = 'h1'"), {"d": DEEP})
    with pytest.raises(_state.StateError, match="corrupt state row.*" + REFUSED):
        st.load_hosts(["h1", "h2"])
    assert st.load_hosts(["h2"])["h2"]["host"] == "h2"


def test_slice_entry():
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import slices as _slices
    from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson

    with pytest.raises(_safejson.JsonBudgetError):
        _slices.decode(zlib.compress(DEEP.encode("ascii")))
    assert _slices.decode(_slices.encode({"status": "ok"}))["status"] == "ok"


def test_plan_handoff(tmp_path):
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import plan_handoff as _plan_handoff

    token = "a" * 32
    path = _plan_handoff._dir(str(tmp_path))
    os.makedirs(path, mode=0o700)
    with open(os.path.join(path, token + ".json"), "w") as fh:
        fh.write(DEEP)
    assert _plan_handoff.read(str(tmp_path), token, ["h1"]) is None


def test_document_filter():
    from ansible.errors import AnsibleFilterError

    from ansible_collections.gpuops.cluster.plugins.plugin_utils import _filters

    with pytest.raises(AnsibleFilterError, match=REFUSED):
        _filters.document("report_summary", DEEP)
    result = _filters.slurm_domain('{"nodes": ' + DEEP + "}", "scontrol")
    assert result["nodes"] == [] and REFUSED in json.dumps(result["errors"])


def test_audit_ledger_line(tmp_path):
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger_audit as _ledger_audit

    log = tmp_path / "audit.log"
    log.write_text("[" * 3000 + "]" * 3000 + "\n")
    assert _ledger_audit.read_changes(str(log)) == []


def test_live_facts_json():
    from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import steps

    entry, status = steps.live({"facts_json": '{"gpu": ' + DEEP + "}"})
    assert REFUSED in json.dumps(entry), entry


# ---------------------------------------------------------------------------------------------------- XML
_SMI = '<nvidia_smi_log><driver_version>535.1</driver_version><gpu id="00000000:01:00.0"><product_name>%s</product_name></gpu></nvidia_smi_log>'


def test_nvsmi_xml_entities_are_never_expanded():
    """An internal entity is refused, not expanded (billion laughs on a node whose expat predates 2.4)."""
    from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import nvsmi_xml as _nvsmi_xml

    doc = '<?xml version="1.0"?><!DOCTYPE nvidia_smi_log [<!ENTITY x "EXPANDED">]>' + _SMI % "&x;"
    with pytest.raises(ParseError, match="entities"):
        _nvsmi_xml.parse(doc, "nvidia-smi-q.xml")
    laughs = "".join('<!ENTITY l%d "%s">' % (i, ("&l%d;" % (i - 1)) * 10 if i else "lol") for i in range(10))
    with pytest.raises(ParseError, match="entities"):
        _nvsmi_xml.parse('<?xml version="1.0"?><!DOCTYPE nvidia_smi_log [%s]>' % laughs + _SMI % "&l9;", "x")
    # the DOCTYPE nvidia-smi prints (an external DTD, never fetched) is still read
    ok = '<?xml version="1.0"?><!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">' + _SMI % "NVIDIA H100"
    assert _nvsmi_xml.parse(ok, "x")["gpus"][0]["name"] == "NVIDIA H100"


def test_nvsmi_xml_deep_nesting_is_a_parse_error_or_a_result():
    from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import nvsmi_xml as _nvsmi_xml

    doc = _SMI % ("<a>" * 100000 + "</a>" * 100000)
    try:
        res = _nvsmi_xml.parse(doc, "x")
    except ParseError:
        return
    assert len(res["gpus"]) == 1


def test_nvsmi_xml_lone_surrogate_is_no_exception():
    """Found by the encoding mutations of the fuzz campaign: a lone surrogate made ElementTree's encoder raise
    UnicodeEncodeError out of the parser (only ParseError may come out)."""
    from ansible_collections.gpuops.cluster.plugins.module_utils.parsers import nvsmi_xml as _nvsmi_xml

    res = _nvsmi_xml.parse(_SMI.replace("535.1", "535.1\ud800") % "NVIDIA H100", "x")
    assert res["gpus"][0]["name"] == "NVIDIA H100"
