# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The EDA event source gpuops.cluster.alertmanager (extensions/eda/plugins/event_source/alertmanager.py): what
it passes on from an Alertmanager body, and the listener configurations it refuses. The listener itself runs
under the real ansible-rulebook in tests/integration/test_eda.py."""

from __future__ import annotations

import hashlib
import hmac
import importlib.util
import json
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location(
    "gpuops_eda_alertmanager", os.path.join(ROOT, "extensions", "eda", "plugins", "event_source", "alertmanager.py")
)
am = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(am)

JINJA = ("{{ lookup('pipe', 'touch /tmp/x') }}", "{% set x = 1 %}", "{# c #}")


def body(*alerts, **top):
    out = {"status": "firing", "groupKey": '{}:{alertname="GpuXid79"}', "alerts": list(alerts)}
    out.update(top)
    return out


def alert(node, name="GpuXid79", status="firing", **labels):
    labels.update(alertname=name, node=node)
    return {"status": status, "labels": labels, "annotations": {"summary": "s"}, "fingerprint": "f"}


def test_sanitize_keeps_only_validated_fields():
    payload, refused = am.sanitize(
        body(alert("gpu-node-02", gpu="3"), alert("gpu-node-05", status="resolved"), receiver="r", externalURL="u")
    )
    assert refused == 0
    assert payload == {
        "status": "firing",
        "group": hashlib.sha256(b'{}:{alertname="GpuXid79"}').hexdigest()[:16],
        "alerts": [
            {"status": "firing", "labels": {"alertname": "GpuXid79", "node": "gpu-node-02"}},
            {"status": "resolved", "labels": {"alertname": "GpuXid79", "node": "gpu-node-05"}},
        ],
        "refused": 0,
    }


@pytest.mark.parametrize("text", JINJA)
@pytest.mark.parametrize("where", ["groupKey", "node", "alertname", "gpu", "annotation", "receiver", "alert_status"])
def test_no_template_text_survives(where, text):
    a = alert("gpu-node-02")
    b = body(a, alert("gpu-node-03"))
    if where == "groupKey":
        b["groupKey"] = text
    elif where in ("node", "alertname", "gpu"):
        a["labels"][where] = text
    elif where == "annotation":
        a["annotations"]["summary"] = text
    elif where == "alert_status":
        a["status"] = text
    else:
        b[where] = text
    payload, refused = am.sanitize(b)
    dumped = json.dumps(payload)
    for delim in ("{{", "{%", "{#", "lookup"):
        assert delim not in dumped
    nodes = [x["labels"]["node"] for x in payload["alerts"]]
    if where in ("node", "alertname", "alert_status"):
        assert (nodes, refused) == (["gpu-node-03"], 1)  # the bad alert is dropped, its neighbour still acts
    else:
        assert (nodes, refused) == (["gpu-node-02", "gpu-node-03"], 0)


@pytest.mark.parametrize(
    "node",
    [
        "gpu-node-02\n",  # `$` would accept the trailing newline; fullmatch does not
        "gpu node",
        "-gpu",
        "gpu-",
        "a..b",
        "",
        "x" * 254,
        "gpu-node-0²",  # not ASCII
        "gpu;reboot",
        ["gpu-node-02"],
        7,
        None,
    ],
)
def test_invalid_node_labels_are_refused(node):
    payload, refused = am.sanitize(body(alert(node)))
    assert (payload, refused) == (None, 1)


@pytest.mark.parametrize("node", ["gpu-node-02", "gpu_node_02", "n1.rack3.example.org", "A", "x" * 63])
def test_valid_node_labels_pass(node):
    payload = am.sanitize(body(alert(node)))[0]
    assert payload["alerts"][0]["labels"]["node"] == node


@pytest.mark.parametrize(
    "bad",
    [
        [],
        "x",
        {"status": "firing"},
        {"status": "firing", "alerts": []},
        {"status": "{{ 1 }}", "alerts": [alert("gpu-node-02")]},
        {"status": "firing", "alerts": "gpu-node-02"},
        {"status": "firing", "alerts": [alert("n%d" % i) for i in range(am.MAX_ALERTS + 1)]},
    ],
)
def test_non_alertmanager_bodies_are_refused(bad):
    with pytest.raises(am.Refused):
        am.sanitize(bad)


def test_group_id_is_stable_and_plain():
    assert am.group_id("k") == am.group_id("k") != am.group_id("k2")
    assert am.group_id({"a": [1]}) == am.group_id({"a": [1]})
    assert len(am.group_id(None)) == 16 and int(am.group_id("{{ x }}"), 16) >= 0


def test_listener_defaults_to_loopback():
    assert am.check_args({"port": "5000", "host": "", "token": ""})["host"] == "127.0.0.1"


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.5", "eda.example"])
def test_non_loopback_without_auth_refuses_to_start(host):
    with pytest.raises(ValueError, match="refusing to listen on"):
        am.check_args({"port": 5000, "host": host, "token": ""})
    assert am.check_args({"port": 5000, "host": host, "token": "x" * 16})["host"] == host
    assert am.check_args({"port": 5000, "host": host, "hmac_secret": "s"})["hmac_algo"] == "sha256"


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", "127.0.0.2"])
def test_loopback_needs_no_token(host):
    assert am.check_args({"port": 5000, "host": host})["port"] == 5000


@pytest.mark.parametrize(
    "args, msg",
    [
        ({"port": "x"}, "port must be an integer"),
        ({"port": 0}, "out of range"),
        ({"port": 5000, "token": "short"}, "at least 16"),
        ({"port": 5000, "hmac_secret": "s", "hmac_algo": "nope"}, "unknown hmac_algo"),
        ({"port": 5000, "certfile": "/c.pem"}, "go together"),
    ],
)
def test_bad_listener_settings_are_refused(args, msg):
    with pytest.raises(ValueError, match=msg):
        am.check_args(args)


def test_token_and_hmac_checks():
    opts = am.check_args({"port": 5000, "token": "s3cret-token-0123"})
    assert am.authorized(opts, {"Authorization": "Bearer s3cret-token-0123"}, b"{}")
    for hdr in ({}, {"Authorization": "Bearer s3cret-token-012"}, {"Authorization": "Basic s3cret-token-0123"}):
        assert not am.authorized(opts, hdr, b"{}")
    opts = am.check_args({"port": 5000, "hmac_secret": "k"})
    sig = hmac.new(b"k", b"{}", "sha256").hexdigest()
    assert am.authorized(opts, {"x-hub-signature-256": "sha256=" + sig}, b"{}")
    assert am.authorized(opts, {"x-hub-signature-256": sig}, b"{}")
    assert not am.authorized(opts, {"x-hub-signature-256": sig}, b"{ }")
    assert not am.authorized(opts, {}, b"{}")
