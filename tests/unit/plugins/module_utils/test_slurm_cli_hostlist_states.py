# Tests for parsers/slurm_cli/hostlist.py and states.py. Expected values: cluster-formats.md sections 1.3 (node
# states, suffixes, compound forms), 1.5 (host lists) and 2 (job states, cut values), which cite Slurm's source.
from __future__ import annotations

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils.parsers.slurm_cli import hostlist, states


# ----------------------------------------------------------------------------------- 1.5 host lists


@pytest.mark.parametrize(
    "text, expected",
    [
        ("e05-[42,76,78,80],e22-13", ["e05-42", "e05-76", "e05-78", "e05-80", "e22-13"]),  # commas outside brackets
        ("c[020-022]", ["c020", "c021", "c022"]),  # width = strlen(lo)
        ("n[8-10]", ["n8", "n9", "n10"]),
        ("n[08-10]", ["n08", "n09", "n10"]),
        ("node[1-3]-ib", ["node1-ib", "node2-ib", "node3-ib"]),  # text after the bracket
        ("rack[1-2]n[01-02]", ["rack1n01", "rack1n02", "rack2n01", "rack2n02"]),  # a range in the prefix too
        ("a b\tc", ["a", "b", "c"]),  # whitespace-separated at the top level
        ("gpu004", ["gpu004"]),
        ("dev[9-12]", ["dev9", "dev10", "dev11", "dev12"]),  # squeue's capture, section 4
        ("", []),
        ("(null)", []),
        ("None assigned", []),  # sacct: a pending job (section 2)
        (None, []),
    ],
)
def test_expand(text, expected):
    assert hostlist.expand(text) == expected


def test_expand_counts_match_what_sinfo_said():
    # section 1.2: "30  alloc b22-[01-20,22-30,32]" and "5 drain* d17-[40-44]": sinfo's own NODES column
    assert len(hostlist.expand("b22-[01-20,22-30,32]")) == 30
    assert hostlist.expand("d17-[40-44]") == ["d17-40", "d17-41", "d17-42", "d17-43", "d17-44"]
    names = hostlist.expand("f[001-004,006-024]")  # section 1.5: ranges mixed in one bracket
    assert len(names) == 23 and names[:5] == ["f001", "f002", "f003", "f004", "f006"] and names[-1] == "f024"


@pytest.mark.parametrize(
    "text",
    [
        "exe[1-100000000]",  # a typo is an error, not an out-of-memory (1.5, GSI)
        "a[0-999999999].b[0-9]",  # MAX_PREFIX_CNT's example (1.5)
        "bgl[123x456]",  # the legacy 3-D box
        "n[1-10/2]",  # ClusterShell step syntax, not Slurm output
        "n[-1-2]",  # negative numbers
        "n[5-3]",
        "n[1-2",
        "n1-2]",
        "n[[1-2]]",
        "n[a-b]",
    ],
)
def test_refused(text):
    with pytest.raises(hostlist.HostlistError):
        hostlist.expand(text)


def test_cut_host_lists_are_recognised():
    assert hostlist.is_cut("gpu[01-0+") and hostlist.is_cut("b22-[01-20,2") and not hostlist.is_cut("b22-[01-20]")


# ----------------------------------------------------------------------------------- 1.3 node states


@pytest.mark.parametrize(
    "compact, long_word",
    [
        ("alloc", "allocated"),
        ("comp", "completing"),
        ("drng", "draining"),
        ("drain", "drained"),
        ("failg", "failing"),
        ("fail", "fail"),
        ("mix", "mixed"),
        ("idle", "idle"),
        ("resv", "reserved"),
        ("block", "blocked"),
        ("plnd", "planned"),
        ("maint", "maint"),
        ("boot", "reboot"),
        ("futr", "future"),
        ("unk", "unknown"),
        ("inval", "inval"),
        ("pow_dn", "power_down"),
        ("pow_up", "power_up"),
        ("powered_dn", "powered_down"),
        ("powring_dn", "powering_down"),
    ],
)
def test_compact_and_long_words_read_the_same(compact, long_word):
    assert states.node_state(compact)["state"] == long_word
    assert states.node_state(long_word)["state"] == long_word
    assert states.node_state(long_word.upper())["state"] == long_word


@pytest.mark.parametrize(
    "suffix, flag",
    [
        ("$", "MAINTENANCE"),
        ("^", "REBOOT_ISSUED"),
        ("@", "REBOOT_REQUESTED"),
        ("#", "POWERING_UP"),
        ("%", "POWERING_DOWN"),
        ("~", "POWERED_DOWN"),
        ("!", "POWER_DOWN"),
        ("*", "NOT_RESPONDING"),
    ],
)
def test_every_suffix(suffix, flag):
    st = states.node_state("idle" + suffix)
    assert st["state"] == "idle" and st["flags"] == [suffix] and flag in st["state_flags"]


def test_completing_and_planned_suffixes_are_not_separators():
    assert states.node_state("alloc+") == {"state": "allocated", "flags": ["+"], "state_flags": ["COMPLETING"]}
    assert states.node_state("mixed-")["state_flags"] == ["PLANNED"]


@pytest.mark.parametrize(
    "text, long_word, flags",
    [
        ("drain*", "drained", ["DRAIN", "NOT_RESPONDING"]),  # section 1.2 "main* ... 5 drain*"
        ("drng@", "draining", ["DRAIN", "REBOOT_REQUESTED"]),  # issue 37's capture
        ("drain$", "drained", ["DRAIN", "MAINTENANCE"]),  # DRAIN+MAINT+NOT_RESPONDING prints drain$ (hides *)
        ("idle+drain+maintenance", "drained", ["DRAIN", "MAINTENANCE"]),  # -O StateComplete
        ("IDLE+DRAIN", "drained", ["DRAIN"]),  # scontrol show node
        ("DOWN+DRAIN", "drained", ["DRAIN"]),  # drained wins over DOWN
        ("DOWN+DRAIN+NOT_RESPONDING", "drained", ["DRAIN", "NOT_RESPONDING"]),
        ("MIXED+DRAIN+DYNAMIC_NORM+MAINTENANCE+RESERVED", "draining", ["DRAIN", "DYNAMIC_NORM", "MAINTENANCE"]),
        ("ALLOCATED+FAIL", "failing", ["FAIL"]),
        ("IDLE+FAIL", "fail", ["FAIL"]),
        (["IDLE", "DRAIN"], "drained", ["DRAIN"]),  # --json 23.02+: node.state is an array (1.4)
        (["MIXED", "DRAIN"], "draining", ["DRAIN"]),
        (["DOWN", "NOT_RESPONDING"], "down", ["NOT_RESPONDING"]),
        ("down*", "down", ["NOT_RESPONDING"]),
        ("fail*", "fail", ["FAIL", "NOT_RESPONDING"]),
    ],
)
def test_compound_states(text, long_word, flags):
    st = states.node_state(text)
    assert st["state"] == long_word and set(flags) <= set(st["state_flags"]), st


def test_not_responding_shows_as_the_star_flag():
    assert states.node_state("DOWN+DRAIN+NOT_RESPONDING")["flags"] == ["*"]
    assert states.node_state("drain$")["flags"] == ["$"]  # the star is hidden by the maintenance suffix


@pytest.mark.parametrize("word", ["", "sleeping", "up", "n/a+", "*"])
def test_unknown_words_are_refused(word):
    with pytest.raises(states.StateError):
        states.node_state(word)


# ----------------------------------------------------------------------------------- 2 job states


@pytest.mark.parametrize(
    "text, cut, state, cause",
    [
        ("OUT_OF_ME+", True, "OUT_OF_MEMORY", "user"),  # the one state the prefix names (section 2)
        ("CANCELLED+", True, "CANCELLED", "user"),  # CANCELLED by <uid>, cut: the state is whole
        ("NODE_FAIL", False, "NODE_FAIL", "node"),
        ("BOOT_FAIL", False, "BOOT_FAIL", "node"),
        ("FAILED", False, "FAILED", "user"),
        ("TIMEOUT", False, "TIMEOUT", "user"),
        ("PREEMPTED", False, "PREEMPTED", "scheduler"),
        ("CANCELLED by 0", False, "CANCELLED", "admin"),  # root/admin
        ("CANCELLED by 1234", False, "CANCELLED", "user"),
        ("COMPLETED", False, "COMPLETED", None),
        ("PD", False, "PENDING", None),  # squeue %t
        ("R", False, "RUNNING", None),
    ],
)
def test_job_states(text, cut, state, cause):
    st = states.job_state(text)
    assert (st["state"], st["cut"], st["cause"]) == (state, cut, cause)


def test_a_cut_state_naming_several_states_is_not_guessed():
    st = states.job_state("RE+")  # REQUEUED, RESIZING, REVOKED, ...: never over-read
    assert st["state"] == "RE" and st["cut"] and st["cause"] is None
    assert states.job_state("CANCELLED by 1234")["by"] == "1234"


def test_exit_codes():
    assert states.exit_code("0:125") == [0, 125] and states.exit_code("3:0") == [3, 0]
    assert states.exit_code("") is None and states.exit_code("0:1+") is None


def test_digits_slurm_never_prints_are_refused():
    for text in ("n[" + "9" * 5000 + "]", "n[٣-٤]", "n[²]"):
        with pytest.raises(hostlist.HostlistError):
            hostlist.expand(text)
    assert states.exit_code("9" * 5000 + ":0") is None and states.exit_code("٣:0") is None
