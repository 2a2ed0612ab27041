# -*- coding: utf-8 -*-
"""Shared fixtures of the InfiniBand collector tests (test_ib.py, test_ib_sysfs.py)."""

from __future__ import annotations

import json
import os
import shutil


HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.normpath(os.path.join(HERE, "..", "..", "..", "fixtures"))
IBSTAT = os.path.join(FIX, "ibstat")
GPUD_TREE = os.path.join(FIX, "sysfs-infiniband", "gpud-h100-8x-cx7-tree")
GPUD_FLAT = os.path.join(FIX, "sysfs-infiniband", "gpud-h100-8x-cx7-flat.txt")
REAL_LAYOUT = os.path.join(FIX, "sysfs-trees", "real-layout-2hca")
PANIC = "ibpanic: [2874] main: stat of IB device 'mlx5_8' failed: No such file or directory"


def read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def build_real_tree(dest):
    """Copy the real-layout fixture to ``dest`` and create the links listed in its links.txt."""
    shutil.copytree(REAL_LAYOUT, dest)
    for line in read(os.path.join(REAL_LAYOUT, "links.txt")).splitlines():
        if " -> " not in line or line.startswith("#"):
            continue
        link, target = line.split(" -> ")
        os.makedirs(os.path.dirname(os.path.join(dest, link)), exist_ok=True)  # git keeps no empty directory
        os.symlink(target, os.path.join(dest, link))
    return dest


def capture_with(tmp_path, files=None, tree=None, meta=None):
    cap = tmp_path / "cap"
    cap.mkdir()
    for name, text in (files or {}).items():
        (cap / name).write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    if tree:
        shutil.copytree(tree, str(cap / "sys" / "class" / "infiniband"))
    if meta is not None:
        (cap / "capture.json").write_text(json.dumps(meta))
    return str(cap)


def by_name(hcas):
    return {h["name"]: h for h in hcas}
