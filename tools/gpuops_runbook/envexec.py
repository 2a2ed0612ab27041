"""Exec a command with secrets added to its environment, read from a pipe: how the ticket hook hands
ansible-playbook its secrets without ansible-runner writing them into ``artifacts/<ident>/command``.

    python -I envexec.py COMMAND [ARG...]

reads one JSON object ``{"NAME": "value", ...}`` from the named pipe (FIFO) given by
``$GPUOPS_RUNBOOK_SECRETS_PIPE``, removes that variable, adds the names to the environment and execs COMMAND
(looked up on ``$PATH``). The hook (gpuops_runbook/secretenv.py) writes the object into the pipe and removes the
pipe after the run: the values live in the kernel's pipe buffer and in process memory, never in a file.
Standard library only; it never prints a value.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Dict, List

PIPE_VAR = "GPUOPS_RUNBOOK_SECRETS_PIPE"
MAX_BYTES = 1024 * 1024


def read_secrets(path: str) -> Dict[str, str]:
    """The {name: value} object the hook wrote into the pipe at ``path``; ValueError when it is not one."""
    with open(path, "rb") as fh:
        data = fh.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError("more than %d bytes" % MAX_BYTES)
    obj = json.loads(data.decode("utf-8"))
    if not isinstance(obj, dict) or not all(
        isinstance(k, str) and k and "=" not in k and "\0" not in k and isinstance(v, str) and "\0" not in v
        for k, v in obj.items()
    ):
        raise ValueError("not an object of environment variables")
    return obj


def main(argv: List[str]) -> int:
    if len(argv) < 2:
        sys.stderr.write("usage: envexec.py COMMAND [ARG...]\n")
        return 2
    path = os.environ.pop(PIPE_VAR, "")
    if path:
        try:
            os.environ.update(read_secrets(path))
        except (OSError, ValueError) as exc:
            # the message names the pipe and the problem, never a value
            sys.stderr.write("envexec: cannot read the secrets from %s: %s\n" % (path, type(exc).__name__))
            return 1
    try:
        os.execvp(argv[1], argv[1:])
    except OSError as exc:
        sys.stderr.write("envexec: cannot run %s: %s\n" % (argv[1], exc.strerror or exc))
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv))
