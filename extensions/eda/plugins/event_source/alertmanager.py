# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.alertmanager: an ansible-rulebook event source for Alertmanager webhooks that hands the rules
validated data only.

An alert body is text from outside. ansible-rulebook passes the event (``ansible_eda.event``) and whatever a rule
renders from it to ansible-playbook as extra vars, and Ansible templates extra vars: a ``{{ lookup('pipe', ...) }}``
in a groupKey or a label would run on the controller. So this source does not pass the body on. It builds a new,
small event from it:

  payload.status            "firing" or "resolved" (anything else: the body is refused, HTTP 400)
  payload.group             16 hex digits, sha256 of the groupKey (the groupKey itself never travels)
  payload.alerts[]          {status: firing|resolved, labels: {alertname, node}} -- only alerts whose alertname
                            fully matches a metric-name pattern and whose node label fully matches a hostname
                            pattern and is not one of Ansible's own groups (all, ungrouped); every other label,
                            annotation, URL and fingerprint is dropped
  payload.refused           how many alerts of the body were dropped

Each kept alert also carries, only when present and fully matching its pattern (else the field is dropped, the
alert kept), what the incident ledger needs to name the fault (gpuops.cluster.incident_event, docs/alerting.md
"Incidents, repeats and suppression"): ``startsAt`` (RFC 3339 UTC or offset time) and the labels ``check``
(gpu.xid), ``component`` (gpu:0), ``code`` (79) and ``severity`` (P0-P3). None of these patterns admits a brace,
a percent sign, a quote or a space.

A body whose alerts are all refused produces no event. Request headers never reach the event. A body that is not
JSON, nested deeper than MAX_DEPTH or larger than MAX_BODY is refused with HTTP 400/413 before it is decoded (the
collection's plugins/module_utils/_safejson.py). A node label names a host: whether it is one of the inventory's
hosts and not one of its groups is checked by the playbook the rule runs (gpuops.cluster.untrusted_input, which has
the inventory), which refuses a group or pattern in gpuops_targets.

The listener binds to 127.0.0.1 unless told otherwise, and it refuses to start without a bearer ``token`` (16+
characters) or an ``hmac_secret``: on loopback too, since any local user can reach a loopback port. Only
``require_token: false`` lets it listen without one, and only on a loopback address. Empty option values count as
unset, so a rulebook can pass ``{{ GPUOPS_EDA_TOKEN | default('') }}``.

Pure functions (``sanitize``, ``check_args``) need only the standard library; the listener imports aiohttp (an
ansible-rulebook dependency) when it starts.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import importlib.util
import ipaddress
import json
import logging
import os
import re
from typing import Any, Dict, List, Optional, Tuple

DOCUMENTATION = r"""
---
short_description: Receive Alertmanager webhook notifications, pass on only validated fields.
description:
  - An ansible-rulebook event source. Listens for Alertmanager webhook POSTs (JSON, at most 1 MiB) and puts one
    event per accepted body on the queue, rebuilt from validated fields only (see the module docstring).
  - Binds to 127.0.0.1 by default. It needs I(token) or I(hmac_secret), or the source refuses to start; on a
    loopback address I(require_token=false) lets it accept unauthenticated POSTs.
options:
  host:
    description: Address to listen on.
    type: str
    default: "127.0.0.1"
  port:
    description: TCP port to listen on.
    type: int
    required: true
  token:
    description:
      - Bearer token the client must send (C(Authorization: Bearer <token>)); at least 16 characters.
      - Alertmanager sends it with C(http_config.authorization.credentials) (or C(credentials_file)).
    type: str
  hmac_secret:
    description: Secret for an HMAC signature of the body, sent in I(hmac_header) as hex (optionally C(sha256=)).
    type: str
  hmac_algo:
    description: hashlib algorithm of the HMAC signature.
    type: str
    default: sha256
  hmac_header:
    description: Header that carries the HMAC signature.
    type: str
    default: x-hub-signature-256
  require_token:
    description:
      - Refuse to start without I(token) or I(hmac_secret). C(false) is accepted on a loopback I(host) only, and
        then any local user can post alerts.
    type: bool
    default: true
  certfile:
    description: PEM certificate to serve TLS with (with I(keyfile)).
    type: str
  keyfile:
    description: PEM key of I(certfile).
    type: str
"""

EXAMPLES = r"""
- gpuops.cluster.alertmanager:
    host: "{{ GPUOPS_EDA_HOST | default('127.0.0.1') }}"
    port: "{{ GPUOPS_EDA_PORT | default(5000) }}"
    token: "{{ GPUOPS_EDA_TOKEN | default('') }}"
    require_token: "{{ GPUOPS_EDA_REQUIRE_TOKEN | default(true) }}"
"""

logger = logging.getLogger(__name__)

MAX_BODY = 1024 * 1024
#: An Alertmanager body is 4 levels deep (body, alerts, alert, labels); anything past this is refused undecoded.
MAX_DEPTH = 16
MAX_ALERTS = 1000
#: Node labels that are Ansible's own groups in every inventory: never a host.
RESERVED_NODES = frozenset({"all", "ungrouped"})
MIN_TOKEN = 16
# RFC 1123 host names (plus "_", which inventories use), dot-separated labels; matched with re.fullmatch.
HOSTNAME = re.compile(
    r"(?=.{1,253}\Z)[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?)*"
)
ALERTNAME = re.compile(r"[A-Za-z_][A-Za-z0-9_:]{0,127}")
#: labels kept when they fully match (the ledger validates them again: store/ledger_keys.py)
LABELS = {
    "check": re.compile(r"[a-z][a-z0-9_]{0,31}(?:\.[a-z0-9_]{1,63}){1,3}"),
    "component": re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/@+-]{0,127}"),
    "code": re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:+-]{0,63}"),
    "severity": re.compile(r"P[0-3]"),
}
STARTS_AT = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?(?:Z|[+-][0-9]{2}:[0-9]{2})"
)
STATUSES = ("firing", "resolved")


class Refused(ValueError):
    """The body is not an Alertmanager notification this source accepts."""


def _safejson() -> Any:
    """The collection's JSON budget (plugins/module_utils/_safejson.py): imported as part of the collection when
    it is on the path, else from this file's collection tree (ansible-rulebook loads a source by its path)."""
    try:
        from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson as mod  # type: ignore

        return mod
    except ImportError:
        pass
    root = os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    )
    path = os.path.join(root, "plugins", "module_utils", "_safejson.py")
    spec = importlib.util.spec_from_file_location("alertmanager_safejson", path)
    if spec is None or spec.loader is None:
        raise ImportError("gpuops.cluster.alertmanager: cannot load %s" % path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_SAFEJSON = _safejson()


def parse_body(raw: bytes) -> Any:
    """The decoded body; Refused when it is larger than MAX_BODY, nested deeper than MAX_DEPTH or not JSON."""
    try:
        return _SAFEJSON.loads(raw, max_depth=MAX_DEPTH, max_bytes=MAX_BODY, what="the body")
    except ValueError as exc:  # JsonBudgetError, json.JSONDecodeError, UnicodeDecodeError
        raise Refused(str(exc)[:300])


def _plain(value: Any, pattern: re.Pattern[str]) -> Optional[str]:
    if isinstance(value, str) and value.isascii() and pattern.fullmatch(value):
        return value
    return None


def group_id(group_key: Any) -> str:
    """16 hex digits naming the Alertmanager group; the same groupKey gives the same id."""
    text = group_key if isinstance(group_key, str) else json.dumps(group_key, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def sanitize(body: Any) -> Tuple[Optional[Dict[str, Any]], int]:
    """(payload for the rules or None when no alert survives, number of alerts refused). Raises Refused for a
    body that is not an Alertmanager notification at all."""
    if not isinstance(body, dict):
        raise Refused("the body is not a JSON object")
    status = body.get("status")
    if status not in STATUSES:
        raise Refused("status is not firing or resolved")
    alerts = body.get("alerts")
    if not isinstance(alerts, list) or not alerts:
        raise Refused("alerts is not a non-empty list")
    if len(alerts) > MAX_ALERTS:
        raise Refused("more than %d alerts in one body" % MAX_ALERTS)
    kept: List[Dict[str, Any]] = []
    for a in alerts:
        labels = a.get("labels") if isinstance(a, dict) else None
        if not isinstance(labels, dict) or a.get("status") not in STATUSES:
            continue
        name = _plain(labels.get("alertname"), ALERTNAME)
        node = _plain(labels.get("node"), HOSTNAME)
        if name is None or node is None or node.lower() in RESERVED_NODES:
            continue
        keep: Dict[str, Any] = {"status": a["status"], "labels": {"alertname": name, "node": node}}
        for key, pattern in LABELS.items():
            value = _plain(labels.get(key), pattern)
            if value is not None:
                keep["labels"][key] = value
        starts = _plain(a.get("startsAt"), STARTS_AT)
        if starts is not None:
            keep["startsAt"] = starts
        kept.append(keep)
    refused = len(alerts) - len(kept)
    if not kept:
        return None, refused
    return {"status": status, "group": group_id(body.get("groupKey")), "alerts": kept, "refused": refused}, refused


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_args(args: Dict[str, Any]) -> Dict[str, Any]:
    """Normalised options; raises ValueError for a configuration the source must not start with."""
    opts = {k: v for k, v in args.items() if v not in (None, "")}
    opts.setdefault("host", "127.0.0.1")
    host = str(opts["host"])
    try:
        port = int(opts.get("port"))
    except (TypeError, ValueError):
        raise ValueError("gpuops.cluster.alertmanager: port must be an integer, got %r" % (opts.get("port"),))
    if not 0 < port < 65536:
        raise ValueError("gpuops.cluster.alertmanager: port %d out of range" % port)
    opts["port"] = port
    token = opts.get("token")
    if token is not None and (not isinstance(token, str) or len(token) < MIN_TOKEN):
        raise ValueError("gpuops.cluster.alertmanager: token must be a string of at least %d characters" % MIN_TOKEN)
    if "hmac_secret" in opts:
        opts.setdefault("hmac_algo", "sha256")
        opts.setdefault("hmac_header", "x-hub-signature-256")
        if opts["hmac_algo"] not in hashlib.algorithms_available:
            raise ValueError("gpuops.cluster.alertmanager: unknown hmac_algo %r" % opts["hmac_algo"])
    if ("certfile" in opts) != ("keyfile" in opts):
        raise ValueError("gpuops.cluster.alertmanager: certfile and keyfile go together")
    require = opts.get("require_token", True)
    if isinstance(require, str) and require.strip().lower() in ("true", "yes", "1", "false", "no", "0"):
        require = require.strip().lower() in ("true", "yes", "1")
    if not isinstance(require, bool):
        raise ValueError("gpuops.cluster.alertmanager: require_token must be true or false, got %r" % (require,))
    opts["require_token"] = require
    if token is None and "hmac_secret" not in opts:
        if not _is_loopback(host):
            raise ValueError(
                "gpuops.cluster.alertmanager: refusing to listen on %s without authentication: set token "
                "(GPUOPS_EDA_TOKEN) or hmac_secret, or listen on 127.0.0.1 (extensions/eda/README.md)" % host
            )
        if require:
            raise ValueError(
                "gpuops.cluster.alertmanager: refusing to listen on %s without authentication: any local user "
                "can post to a loopback port; set token (GPUOPS_EDA_TOKEN, 16+ characters) or hmac_secret, or "
                "require_token: false (GPUOPS_EDA_REQUIRE_TOKEN=false) to accept unauthenticated alerts from "
                "this host (extensions/eda/README.md)" % host
            )
    return opts


def authorized(opts: Dict[str, Any], headers: Any, body: bytes) -> bool:
    """True when the request carries the configured token and/or a valid HMAC signature of the body."""
    if "token" in opts:
        got = headers.get("Authorization", "")
        want = "Bearer " + opts["token"]
        if not hmac.compare_digest(got.strip().encode("utf-8", "replace"), want.encode("utf-8")):
            return False
    if "hmac_secret" in opts:
        sig = headers.get(opts["hmac_header"], "").strip()
        prefix = opts["hmac_algo"] + "="
        if sig.startswith(prefix):
            sig = sig[len(prefix) :]
        mac = hmac.new(opts["hmac_secret"].encode("utf-8"), body, opts["hmac_algo"])
        if not (
            hmac.compare_digest(sig.encode("utf-8", "replace"), mac.hexdigest().encode())
            or hmac.compare_digest(sig.encode("utf-8", "replace"), base64.b64encode(mac.digest()))
        ):
            return False
    return True


async def main(queue: asyncio.Queue, args: Dict[str, Any]) -> None:
    """Listen until cancelled."""
    opts = check_args(args)
    from aiohttp import web

    async def receive(request: web.Request) -> web.Response:
        if request.content_length is not None and request.content_length > MAX_BODY:
            raise web.HTTPRequestEntityTooLarge(max_size=MAX_BODY, actual_size=request.content_length)
        raw = await request.read()
        if not authorized(opts, request.headers, raw):
            logger.warning("gpuops.cluster.alertmanager: unauthenticated request from %s refused", request.remote)
            raise web.HTTPUnauthorized(text="authentication required")
        try:
            payload, refused = sanitize(parse_body(raw))
        except Refused as exc:
            logger.warning("gpuops.cluster.alertmanager: body refused: %s", exc)
            raise web.HTTPBadRequest(text="refused: %s" % exc)
        if refused:
            logger.warning("gpuops.cluster.alertmanager: %d alert(s) without a valid alertname/node refused", refused)
        if payload is not None:
            await queue.put({"payload": payload, "meta": {"endpoint": "alertmanager"}})
        return web.Response(text="accepted %d refused %d\n" % (len(payload["alerts"]) if payload else 0, refused))

    app = web.Application(client_max_size=MAX_BODY)
    app.router.add_post("/{endpoint:.*}", receive)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    ssl_context = None
    if "certfile" in opts:
        import ssl

        ssl_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ssl_context.load_cert_chain(opts["certfile"], opts["keyfile"])
    site = web.TCPSite(runner, opts["host"], opts["port"], ssl_context=ssl_context)
    await site.start()
    logger.info("gpuops.cluster.alertmanager listening on %s:%d", opts["host"], opts["port"])
    try:
        await asyncio.Future()
    finally:
        await runner.cleanup()


if __name__ == "__main__":  # pragma: no cover - manual run: python alertmanager.py 127.0.0.1 5000

    class _Print(asyncio.Queue):
        async def put(self, item: Any) -> None:
            print(json.dumps(item))  # noqa: T201

    import sys

    asyncio.run(main(_Print(), {"host": sys.argv[1], "port": sys.argv[2]}))
