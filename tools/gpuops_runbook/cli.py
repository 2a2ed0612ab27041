"""`gpuops-runbook`: the ticket hook's command line (docs/operations.md, "Ticket hook").

gpuops-runbook run -i inventories/prod/hosts.yml --state-dir /var/lib/gpuops [PAYLOAD.json|-]
gpuops-runbook lookup --check gpu.xid --code 79       (or --alert GpuXid79, --runbook ib_port; --json: the entry)
gpuops-runbook list
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any, Dict, List, Optional

from gpuops_runbook import catalog, collection, command, hook, payload, safety


def _write(result: Dict[str, Any], path: Optional[str]) -> None:
    """The result on stdout, and (0600) in `path` when given: stdout first, so the ticket gets its result even
    when the file cannot be written."""
    text = json.dumps(result, indent=2, sort_keys=True, default=str)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    if path:
        safety.write_private(path, text + "\n")


def _read_payload(src: str) -> str:
    if src == "-":
        return sys.stdin.read()
    with open(src, encoding="utf-8") as fh:
        return fh.read()


def cmd_run(args: argparse.Namespace) -> int:
    root = os.path.abspath(args.root or catalog.default_root())
    state_dir = os.path.abspath(args.state_dir)
    bin_dir = os.path.dirname(os.path.abspath(sys.executable))
    env = hook.runner_env(root, state_dir, bin_dir)
    payload: Dict[str, Any] = {}
    try:
        try:
            text = _read_payload(args.payload)
        except (OSError, UnicodeDecodeError) as exc:
            raise hook.PayloadError(["cannot read the payload %s: %s" % (args.payload, exc)])
        payload = hook.parse_payload(text)
        try:
            data = catalog.load(args.catalog or os.path.join(root, "runbooks", "catalog.yml"))
        except catalog.CatalogError as exc:
            raise hook.PayloadError([str(exc)], status="error")
        inventory = args.inventory or os.environ.get("GPUOPS_INVENTORY")
        if not inventory:
            raise hook.PayloadError(["no inventory: pass -i/--inventory or set GPUOPS_INVENTORY"], status="error")
        try:
            config = safety.load_config(args.config)
        except safety.ConfigError as exc:
            raise hook.PayloadError([str(exc)], status="error")
        env = hook.runner_env(root, state_dir, bin_dir, config.pass_env)
        known, groups = hook.inventory(inventory, env)
        req = hook.resolve(payload, data, known, config, known_groups=groups)
        playbook = os.path.join(root, req["entry"]["playbook"])
        if not os.path.isfile(playbook):
            raise hook.PayloadError(
                ["runbook %s: playbook %s does not exist" % (req["entry"]["id"], playbook)], status="error"
            )
    except hook.PayloadError as exc:
        result = hook.base_result(None, payload)
        result.update(status=exc.status, errors=exc.errors)
        _write(result, args.result)
        return hook.RC_INVALID
    if args.validate_only:
        result = hook.base_result(req, payload)
        result.update(status="valid", extravars=req["extravars"])
        _write(result, args.result)
        return hook.RC_OK
    os.environ.update(env)  # ansible-runner execs ansible-playbook from PATH: the venv's bin comes first
    try:
        rc, result = hook.run_request(
            req, root, inventory, state_dir, env, args.lock_timeout, timeout=args.timeout or None
        )
    except Exception as exc:  # the ticket must get a result, whatever broke
        result = hook.base_result(req, payload)
        result.update(status="error", errors=["%s: %s" % (type(exc).__name__, exc)])
        rc = hook.RC_FAILED
    if result.get("ticket_dir") and os.path.isdir(result["ticket_dir"]):
        name = "result-%s.json" % result.get("ident", "last")
        text = json.dumps(result, indent=2, sort_keys=True, default=str)
        safety.write_private(os.path.join(result["ticket_dir"], name), text + "\n")
        result["result_file"] = os.path.join(result["ticket_dir"], name)
    _write(result, args.result)
    return rc


#: An inventory path lookup writes into the printed commands: no shell syntax (always re.fullmatch).
_INVENTORY = re.compile(r"[A-Za-z0-9_./+@:=,-]{1,4096}")


def _lookup_input_errors(args: argparse.Namespace) -> List[str]:
    """The node names and the ticket, full matches (the hook's rules, docs/operations.md): a ticket with a space
    would be split by `-e gpuops_ticket=...` and is refused, not printed."""
    errors = []
    for node in args.node or ():
        if not payload.NODE.fullmatch(node):
            errors.append("--node %r is not an inventory host name (letters, digits and _.-)" % node)
    if args.ticket is not None and not payload.TICKET.fullmatch(args.ticket):
        errors.append(
            "--ticket %r is not a ticket id: one word of letters, digits and _.@+- (at most 128), e.g. INC-1; "
            "`-e gpuops_ticket=...` would split it at a space" % args.ticket
        )
    if args.inventory is not None and not _INVENTORY.fullmatch(args.inventory):
        errors.append(
            "-i %r: an inventory path of letters, digits and _./+@:=,- (it is pasted into a shell)" % args.inventory
        )
    return errors


def cmd_lookup(args: argparse.Namespace) -> int:
    errors = _lookup_input_errors(args)
    if errors:
        sys.stderr.write("".join("lookup: %s\n" % e for e in errors))
        return hook.RC_INVALID
    root = os.path.abspath(args.root or catalog.default_root())
    data = catalog.load(args.catalog or os.path.join(root, "runbooks", "catalog.yml"))
    if args.runbook:
        entry = catalog.by_id(data, args.runbook)
    elif args.alert:
        entry = catalog.by_alert(data, args.alert)
    elif args.check:
        entry = catalog.by_finding(data, args.check, args.code)
    else:
        sys.stderr.write("lookup: give --runbook, --alert or --check [--code]\n")
        return hook.RC_INVALID
    if entry is None:
        reason = (data.get("unmapped") or {}).get(args.check or "")
        if args.json:
            sys.stdout.write(json.dumps({"entry": None, "unmapped_reason": reason}, indent=2) + "\n")
        else:
            what = args.runbook or args.alert or ":".join(str(x) for x in (args.check, args.code) if x)
            sys.stdout.write("# no runbook for %s%s\n" % (what, ": %s" % reason if reason else ""))
        return 1
    if args.json:
        sys.stdout.write(json.dumps({"entry": entry}, indent=2, sort_keys=True) + "\n")
    else:
        try:
            with open(os.path.join(root, "runbooks", entry["runbook"]), encoding="utf-8") as fh:
                text = fh.read()
        except OSError as exc:
            sys.stderr.write("lookup: cannot read the runbook: %s\n" % exc)
            text = ""
        sys.stdout.write(command.procedure(text, entry, args.node or (), args.ticket, args.inventory))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    root = os.path.abspath(args.root or catalog.default_root())
    data = catalog.load(args.catalog or os.path.join(root, "runbooks", "catalog.yml"))
    for e in catalog.entries(data):
        sys.stdout.write(
            "%-22s %-26s %-10s %s%s\n"
            % (e["id"], e["playbook"], e["change_class"], e["title"], "  [approval]" if e["approval_required"] else "")
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gpuops-runbook", description=__doc__.split("\n\n")[0])
    p.add_argument("--root", help="collection root (default: $GPUOPS_ROOT, this checkout, or the installed collection)")
    p.add_argument("--catalog", help="runbook catalogue (default: <root>/runbooks/catalog.yml)")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="validate a ticket payload and run its runbook playbook")
    r.add_argument("payload", nargs="?", default="-", help="payload JSON file, '-' = stdin (default)")
    r.add_argument("-i", "--inventory", help="inventory (default $GPUOPS_INVENTORY)")
    r.add_argument(
        "--state-dir",
        default=os.environ.get("GPUOPS_STATE_DIR") or os.path.expanduser("~/.local/state/gpuops"),
        help="gpuops state dir: locks, tickets/<id>/ artifacts and results, the audit log",
    )
    r.add_argument("--result", help="also write the result JSON here (0600)")
    r.add_argument(
        "--config",
        help="hook config: requesters/approvers per runbook class, report/state roots "
        "(default $GPUOPS_RUNBOOK_CONFIG or %s)" % safety.DEFAULT_CONFIG,
    )
    r.add_argument(
        "--lock-timeout",
        type=float,
        default=float(os.environ.get("GPUOPS_RUNBOOK_LOCK_TIMEOUT", "300")),
        help="seconds to wait for a node another run holds (0 = refuse at once; default 300)",
    )
    r.add_argument("--timeout", type=int, default=0, help="kill the playbook after this many seconds (0 = none)")
    r.add_argument("--validate-only", action="store_true", help="check the payload, print the variables, run nothing")
    r.set_defaults(func=cmd_run)
    lk = sub.add_parser(
        "lookup", help="which runbook handles a finding / alert, and its whole procedure (preconditions, every step)"
    )
    lk.add_argument("--check")
    lk.add_argument("--code")
    lk.add_argument("--alert")
    lk.add_argument("--runbook")
    lk.add_argument("--node", action="append", help="fill in the node (repeat for several; default: NODE)")
    lk.add_argument("--ticket", help="fill in the ticket (default: TICKET)")
    lk.add_argument("-i", "--inventory", help="fill in the inventory (default: INVENTORY)")
    lk.add_argument("--json", action="store_true", help="print the catalogue entry as JSON instead of the command")
    lk.set_defaults(func=cmd_lookup)
    ls = sub.add_parser("list", help="the catalogue, one line per entry")
    ls.set_defaults(func=cmd_list)
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except collection.CollectionNotFound as exc:  # first: catalog.CatalogError itself comes from the collection
        sys.stderr.write("gpuops-runbook: %s\n" % exc)
        return hook.RC_FAILED
    except catalog.CatalogError as exc:
        sys.stderr.write("gpuops-runbook: %s\n" % exc)
        return hook.RC_INVALID


if __name__ == "__main__":
    sys.exit(main())
