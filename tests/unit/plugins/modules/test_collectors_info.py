# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every *_info module runs its collector through _collect.boundary: a collector bug is an error record, never a
traceback, and the result keeps the domain's shape."""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import collect as _collect
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError
from ansible_collections.gpuops.cluster.plugins.modules import (
    bmc_info,
    collect_info,
    dcgm_diag_info,
    gpu_info,
    infiniband_info,
    kernel_events_info,
    nccl_test_info,
    node_info,
)

# module, its return key, the domain its error records name, keys the empty result must still have
CASES = [
    (bmc_info, "bmc", "bmc", ["sensors"]),
    (dcgm_diag_info, "dcgm", "dcgm", ["tests", "gpus", "overall"]),
    (gpu_info, "gpu", "gpu", ["gpus", "count", "driver_version"]),
    (infiniband_info, "ib", "ib", ["hcas", "boot_id"]),
    (kernel_events_info, "kernel", "kernel", ["events", "events_dropped", "since"]),
    (nccl_test_info, "nccl", "nccl", ["rows"]),
    (node_info, "node", "node", ["mounts", "services"]),
]


def _run(module, capsys, args=None):
    with patch_module_args(dict(args or {}, _ansible_check_mode=True)), pytest.raises(SystemExit) as exc:
        module.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("module, key, domain, keys", CASES, ids=[c[1] for c in CASES])
def test_collector_bug_is_an_error_record(module, key, domain, keys, capsys, monkeypatch):
    def boom(**kwargs):
        raise KeyError("surprise")

    monkeypatch.setattr(module, "collect", boom)
    rc, out = _run(module, capsys)
    assert rc == 0 and out["changed"] is False and "failed" not in out and "exception" not in out
    result = out[key]
    assert result["source"] is None
    [err] = result["errors"]
    assert err["domain"] == domain and err["kind"] == "internal"
    assert err["message"] == "KeyError: 'surprise'"
    assert err["source"].startswith("test_collectors_info.py:")
    assert all(k in result for k in keys), sorted(result)


@pytest.mark.parametrize("module, key, domain, keys", CASES[:4], ids=[c[1] for c in CASES[:4]])
def test_parse_error_escaping_a_collector_keeps_its_kind(module, key, domain, keys, capsys, monkeypatch):
    def bad(**kwargs):
        raise ParseError("cut short", parser="p", source="f.txt", line=3)

    monkeypatch.setattr(module, "collect", bad)
    rc, out = _run(module, capsys)
    [err] = out[key]["errors"]
    assert rc == 0 and err["kind"] == "parse" and err["domain"] == domain and err["line"] == 3


def test_collector_returning_garbage_is_an_error_record(capsys, monkeypatch):
    monkeypatch.setattr(infiniband_info, "collect", lambda **kwargs: ["not", "a", "dict"])
    rc, out = _run(infiniband_info, capsys)
    [err] = out["ib"]["errors"]
    assert rc == 0 and err["kind"] == "internal" and "collect() returned list" in err["message"]


def test_collect_info_names_the_failing_domain_and_keeps_the_others(tmp_path, capsys, monkeypatch):
    def boom(**kwargs):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setitem(_collect._cache, "ib", boom)
    monkeypatch.setitem(_collect._params, "ib", ("capture_dir", "timeout"))
    (tmp_path / "kernel.log").write_text("")
    rc, out = _run(collect_info, capsys, {"capture_dir": str(tmp_path), "domains": ["ib", "kernel"]})
    facts = out["facts"]
    assert rc == 0 and facts["schema"] == _collect.SCHEMA
    assert facts["ib"]["source"] is None
    assert [e["domain"] for e in facts["errors"] if e["kind"] == "internal"] == ["ib"]
    assert facts["kernel"]["source"] == "capture:kernel.log"


def test_boundary_keeps_a_good_result_and_adds_errors():
    assert _collect.boundary("x", lambda **kw: {"source": "s", "n": kw["n"]}, None, n=2) == {
        "source": "s",
        "n": 2,
        "errors": [],
    }


def test_collector_spec_has_the_common_options():
    spec = _collect.collector_spec(timeout=10, extra={"type": "str"})
    assert spec == {
        "capture_dir": {"type": "path"},
        "timeout": {"type": "float", "default": 10},
        "extra": {"type": "str"},
    }


def test_collect_all_passes_bmc_connection_options(monkeypatch):
    seen = {}

    def fake_bmc(capture_dir=None, mode="inband", timeout=30, ipmitool_path="ipmitool", **connection):
        seen.update(connection, mode=mode)
        return {"source": "redfish", "sensors": []}

    monkeypatch.setattr(_collect._bmc, "collect", fake_bmc)
    monkeypatch.setattr(_collect, "_cache", {})  # fresh caches, restored after the test
    monkeypatch.setattr(_collect, "_params", {})
    facts = _collect.collect_all(domains=["bmc"], options={"bmc": {"mode": "redfish", "host": "h", "port": 8443}})
    assert facts["bmc"]["source"] == "redfish"
    assert seen == {"mode": "redfish", "host": "h", "port": 8443}
