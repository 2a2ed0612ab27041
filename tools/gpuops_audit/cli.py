"""``gpuops-audit verify LOG [--head H] [--anchor A] [--chain-only]``: verify a gpuops.cluster audit log.

Exit 0 when the hash chain verifies and ends at the head (``head.json`` beside the log unless ``--head`` names
another, a path or a sha256); 1 when it does not, with the verification result as JSON on stdout (first bad
line, reason). A missing head is a failure unless ``--chain-only`` is given. ``--anchor`` is a head kept off the
controller (``SEQ:HASH``, the callback's syslog line, a head JSON object or a file holding one) that the log must
still contain. Usage errors exit 2 (argparse).

The verifier is the collection's own ``plugins/plugin_utils/store/audit.py``, imported from the collections path the
playbooks use (``$ANSIBLE_COLLECTIONS_PATH``, else ``build/`` of the source tree), so the CLI and the
``gpuops.cluster.audit_verify`` action can never disagree.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, List, Optional

from gpuops_runbook import collection


def audit_module() -> Any:
    """The collection's audit module, found by the CLIs' one finder (``gpuops_runbook.collection``):
    $ANSIBLE_COLLECTIONS_PATH, the source tree's build/, Ansible's configured collections paths."""
    return collection.audit()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gpuops-audit", description="gpuops.cluster audit trail tools")
    sub = p.add_subparsers(dest="command", required=True)
    v = sub.add_parser("verify", help="verify an audit log's hash chain and its end (head)")
    v.add_argument("log")
    v.add_argument("--head", help="head.json path or sha256; default: head.json beside the log (missing: failure)")
    v.add_argument(
        "--anchor", help="a head kept off the controller (SEQ:HASH, a head JSON line or file) the log must contain"
    )
    v.add_argument(
        "--chain-only",
        "--no-head",
        dest="chain_only",
        action="store_true",
        help="check the chain alone, without a head (removed last records then go unseen)",
    )
    return p


def verify(args: argparse.Namespace) -> int:
    audit = audit_module()
    head: Any = None if args.chain_only else (args.head or audit.default_head_path(args.log))
    res = audit.verify(args.log, head, chain_only=args.chain_only, anchor=args.anchor)
    json.dump(res, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0 if res["ok"] else 1


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)
    try:
        return {"verify": verify}[args.command](args)
    except OSError as e:
        sys.stderr.write("gpuops-audit: %s\n" % e)
        return 1
