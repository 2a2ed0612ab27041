# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.capture's controller side: the tree the node sends back is written privately, never through a
link, never outside dest (the module run on the node is replaced by its answer)."""

from __future__ import annotations

import os
import stat
from unittest import mock

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.gpuops.cluster.plugins.action import capture as capture_action

SECRET = "victim-file-content"


@pytest.fixture(autouse=True)
def umask_022():
    """Every test under a permissive umask: what the action writes must still come out private."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def run_action(dest, tree):
    task = mock.MagicMock()
    task.args = {"dest": str(dest)}
    task.async_val = 0
    task.check_mode = False
    action = capture_action.ActionModule(
        task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=None, shared_loader_obj=None
    )
    answer = {"changed": False, "tree": dict(tree), "meta": {"hostname": "gpu-node-07"}}
    with mock.patch.object(action, "_execute_module", return_value=answer):
        return action.run(task_vars={})


def mode(p):
    return stat.S_IMODE(os.lstat(str(p)).st_mode)


def test_tree_is_written_private(tmp_path):
    dest = tmp_path / "captures" / "gpu-node-07"
    tree = {"kernel.log": "k\n", "capture.json": "{}", "sys/class/infiniband/mlx5_0/fw_ver": "28.41.1000\n"}
    res = run_action(dest, tree)
    assert sorted(res["files"]) == sorted(tree)
    for rel, text in tree.items():
        assert (dest / rel).read_text() == text
        assert mode(dest / rel) == 0o600
    for d in (dest, dest / "sys", dest / "sys" / "class" / "infiniband" / "mlx5_0", tmp_path / "captures"):
        assert mode(d) == 0o700, d


def test_planted_file_link_is_replaced_not_written_through(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text(SECRET)
    dest = tmp_path / "cap"
    dest.mkdir()
    os.symlink(str(victim), dest / "kernel.log")
    run_action(dest, {"kernel.log": "evidence\n"})
    assert victim.read_text() == SECRET
    assert not os.path.islink(dest / "kernel.log") and (dest / "kernel.log").read_text() == "evidence\n"


@pytest.mark.parametrize("rel", ["../escape.txt", "/etc/escape.txt", "sys/../../escape.txt", "a//b", "x\x00y"])
def test_names_outside_dest_are_refused(tmp_path, rel):
    dest = tmp_path / "cap"
    with pytest.raises(AnsibleActionFail, match="outside dest"):
        run_action(dest, {rel: "x"})
    assert not (tmp_path / "escape.txt").exists()


def test_directory_link_out_of_dest_is_refused_and_nothing_created_there(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "cap"
    dest.mkdir()
    os.symlink(str(outside), dest / "sys")
    with pytest.raises(AnsibleActionFail, match="outside dest"):
        run_action(dest, {"sys/class/infiniband/mlx5_0/fw_ver": "1\n"})
    assert os.listdir(outside) == []
