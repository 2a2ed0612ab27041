"""The environment every benchmark runs ansible-playbook in: the repo's venv first on PATH, the collection from
build/ (after `make setup`), the repo's ansible.cfg, no colour, no inventory from the caller's environment."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = REPO / ".venv" / "bin"


def ansible_env(**extra: str) -> dict:
    """os.environ plus the benchmark settings, then ``extra`` (e.g. ANSIBLE_CALLBACKS_ENABLED)."""
    e = dict(os.environ)
    e.update(
        PATH="%s:%s" % (VENV_BIN, e.get("PATH", "")),
        ANSIBLE_COLLECTIONS_PATH=str(REPO / "build"),
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
    )
    e.pop("ANSIBLE_INVENTORY", None)
    e.update(extra)
    return e
