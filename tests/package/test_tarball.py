# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Galaxy tarball as a user gets it (issue 14, docs/install.md).

`ansible-galaxy collection build` of this tree; the tarball's contents and metadata; `ansible-galaxy collection
install --offline` into an EMPTY collections path together with its dependency (community.general, built here
into a tarball from the copy shipped in the `ansible` Python package: no network); then, from a fresh directory
with only that collections path (no ansible.cfg, nothing of this checkout on any path), the offline inspection of
a freshly generated simulated cluster, `--syntax-check` of the shipped playbooks, `ansible-doc` of every plugin
and role, and `ansible-galaxy collection verify` (nothing was written into the installed collection).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from ansible.release import __version__ as ANSIBLE_CORE
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from package_helpers import ROOT, clean_env, run

GALAXY = yaml.safe_load((ROOT / "galaxy.yml").read_text(encoding="utf-8"))
FQCN = "%s.%s" % (GALAXY["namespace"], GALAXY["name"])
TARBALL = "%s-%s-%s.tar.gz" % (GALAXY["namespace"], GALAXY["name"], GALAXY["version"])

# Bounds on what a user downloads. Before issue 14 the tarball was 1.32 MB with 4,482 files (7.8 MB unpacked:
# the simulated cluster's captures, the tests, the test bed, molecule); after it 0.49 MB, 293 files, 1.7 MB; after
# issue 35/36 (rooms by domain: a package per domain, each with its __init__.py) 0.99 MB, 508 files, 3.4 MB; by
# 2026-12-08 1.19 MB, 572 files, 4.1 MB (the code and docs themselves grew); 1.14 MB, 506 files, 3.98 MB without the
# unreleased changelog fragments (65 files, developer input) and the docs of the repository-only tools and tests.
MAX_FILES = 600
MAX_UNPACKED_BYTES = 4_500_000
MAX_TARBALL_BYTES = 1_200_000

# The tarball's top level, at most (MANIFEST.json and FILES.json are written by the build).
SHIPPED_TOP = {
    "MANIFEST.json", "FILES.json", "README.md", "LICENSE", "CHANGELOG.rst", "requirements.txt", "bindep.txt",
    "meta", "plugins", "roles", "playbooks", "docs", "runbooks", "changelogs", "awx", "extensions", "inventories",
    "tests",
}  # fmt: skip
# What must never ship: the developer loop, tests and the test bed, the tools, generated or captured data.
NOT_SHIPPED_DIRS = (
    "tests/testbed/", "tests/unit/", "tests/integration/", "tests/fixtures/", "tests/fuzz/", "tests/package/",
    "tests/output/", "molecule/", "tools/", "bench/", ".ci/", "build/", "reports/", "inventories/sim/", ".git/",
    "state/", "captures/", "changelogs/fragments/",
)  # fmt: skip
# docs of what only the repository has: the simulator (tools/) and the test suite / test bed (tests/)
REPO_ONLY_DOCS = ("docs/simulation.md", "docs/testing.md")
NOT_SHIPPED_FILES = {
    "Makefile", "ansible.cfg", "requirements-dev.txt", "pyproject.toml", ".ansible-lint", ".yamllint", ".gitignore",
    "execution-environment.yml", "tests/conftest.py", "tests/run-stages.sh", "tests/get_pip_shim.py",
    *REPO_ONLY_DOCS,
}  # fmt: skip
# The changelog a user reads ships (CHANGELOG.rst and changelogs/changelog.yaml); its unreleased fragments do not.
CHANGELOG_SHIPPED = {"CHANGELOG.rst", "changelogs/changelog.yaml", "changelogs/config.yaml"}
# What a user needs and therefore must ship in full (every file of these directories in the source tree).
USER_DIRS = ("plugins", "roles", "playbooks", "runbooks", "docs", "meta", "awx", "extensions", "inventories/example")
# The one shipped playbook that needs a collection which is not a dependency (awx.awx: docs/install.md).
NEEDS_OPTIONAL = {"awx_configure"}
# ansible-doc plugin types by plugins/ directory (action plugins are documented by their module stubs).
DOC_TYPES = {
    "modules": "module",
    "filter": "filter",
    "test": "test",
    "callback": "callback",
    "lookup": "lookup",
    "inventory": "inventory",
    "connection": "connection",
    "become": "become",
    "cache": "cache",
    "strategy": "strategy",
    "vars": "vars",
}


def _galaxy(*args):
    return [str(Path(sys.executable).parent / "ansible-galaxy"), "collection", *args]


def _source_files(top: str) -> set:
    base = ROOT / top
    return {
        p.relative_to(ROOT).as_posix()
        for p in base.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


def _local_dependency(ns: str, name: str, spec: str) -> Path:
    """The collection ns.name as shipped inside an installed Python package (the `ansible` package's copy)."""
    for entry in sys.path:
        cand = Path(entry or ".") / "ansible_collections" / ns / name
        # not the collections of this checkout's build/ (a venv inside the checkout, as in CI, does count)
        if cand.resolve().is_relative_to((ROOT / "build").resolve()) or not (cand / "MANIFEST.json").is_file():
            continue
        version = json.loads((cand / "MANIFEST.json").read_text())["collection_info"]["version"]
        if spec in ("*", "") or Version(version) in SpecifierSet(spec):
            return cand
    pytest.fail(
        "no local copy of %s.%s %s on sys.path (the `ansible` package of requirements-dev.txt ships one): the "
        "package stage installs dependencies offline only" % (ns, name, spec)
    )


def _repack(src: Path, work: Path, out: Path, env) -> Path:
    """A Galaxy tarball of an installed collection: its files (no bytecode) with a galaxy.yml made from its
    MANIFEST.json, built by `ansible-galaxy collection build` (an installed copy can lack files its FILES.json
    lists, so it cannot be tarred as it is)."""
    info = json.loads((src / "MANIFEST.json").read_text())["collection_info"]
    tree = work / info["namespace"] / info["name"]
    shutil.copytree(src, tree, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "MANIFEST.json", "FILES.json"))
    meta = {k: v for k, v in info.items() if v not in (None, [], {})}
    (tree / "galaxy.yml").write_text(yaml.safe_dump(meta), encoding="utf-8")
    run(_galaxy("build", tree, "--output-path", out), work, env)
    return out / ("%s-%s-%s.tar.gz" % (info["namespace"], info["name"], info["version"]))


@pytest.fixture(scope="module")
def dist(tmp_path_factory, package_home) -> Path:
    out = tmp_path_factory.mktemp("dist")
    run(_galaxy("build", ROOT, "--output-path", out), out, clean_env(package_home))
    tarball = out / TARBALL
    assert tarball.is_file(), sorted(p.name for p in out.iterdir())
    return tarball


@pytest.fixture(scope="module")
def deps(tmp_path_factory, package_home) -> list:
    """A tarball of every declared dependency, built from local copies."""
    work = tmp_path_factory.mktemp("deps")
    out = work / "dist"
    tarballs = []
    for fq, spec in (GALAXY.get("dependencies") or {}).items():
        ns, name = fq.split(".")
        tarballs.append(_repack(_local_dependency(ns, name, str(spec)), work / "src", out, clean_env(package_home)))
    return tarballs


@pytest.fixture(scope="module")
def installed(tmp_path_factory, package_home, dist, deps) -> dict:
    """The collection and its dependencies installed offline into an empty collections path."""
    base = tmp_path_factory.mktemp("user")
    coll = base / "collections"
    coll.mkdir()
    cwd = base / "work"
    cwd.mkdir()
    env = clean_env(package_home, coll)
    proc = run(_galaxy("install", dist, *deps, "-p", coll, "--offline"), cwd, env)
    assert "%s:%s was installed successfully" % (FQCN, GALAXY["version"]) in proc.stdout
    return {
        "coll": coll,
        "cwd": cwd,
        "env": env,
        "path": coll / "ansible_collections" / GALAXY["namespace"] / GALAXY["name"],
    }


def _members(tarball: Path) -> dict:
    with tarfile.open(tarball) as tf:
        return {m.name: m for m in tf.getmembers()}


def test_tarball_holds_what_a_user_needs_and_nothing_else(dist):
    members = _members(dist)
    files = {n: m for n, m in members.items() if m.isfile()}
    unpacked = sum(m.size for m in files.values())
    figures = "%d files, %d bytes unpacked, %d bytes tarball" % (len(files), unpacked, dist.stat().st_size)
    assert len(files) <= MAX_FILES and unpacked <= MAX_UNPACKED_BYTES, figures
    assert dist.stat().st_size <= MAX_TARBALL_BYTES, figures
    assert {n.split("/")[0] for n in members} <= SHIPPED_TOP, figures
    shipped_tests = {n for n in files if n.startswith("tests/")}
    assert shipped_tests and all(n.startswith("tests/sanity/") or n == "tests/config.yml" for n in shipped_tests)
    bad = sorted(
        n
        for n in members
        if n in NOT_SHIPPED_FILES
        or (n + "/").startswith(NOT_SHIPPED_DIRS)
        or "/.sim/" in "/" + n + "/"
        or "__pycache__" in n
        or n.endswith((".pyc", ".tar.gz"))
    )
    assert not bad, bad
    missing = sorted(set().union(*(_source_files(d) for d in USER_DIRS)) - set(REPO_ONLY_DOCS) - set(files))
    missing += sorted(CHANGELOG_SHIPPED - set(files))
    assert not missing, "build_ignore drops what a user needs: %s" % missing


def test_metadata_declares_dependencies_and_supported_ansible(dist):
    with tarfile.open(dist) as tf:
        manifest = json.load(tf.extractfile("MANIFEST.json"))
        runtime = yaml.safe_load(tf.extractfile("meta/runtime.yml"))
        ignores = {Path(n).name for n in tf.getnames() if n.startswith("tests/sanity/ignore-")}
    info = manifest["collection_info"]
    assert info["dependencies"] == GALAXY["dependencies"] and "community.general" in info["dependencies"]
    assert "awx.awx" not in info["dependencies"]  # optional: only playbooks/awx_configure.yml (docs/install.md)
    for key in ("repository", "documentation", "homepage", "issues"):
        assert info[key].startswith("https://") and "example" not in info[key], (key, info[key])
    # requires_ansible is bounded, and bounded to what sanity covers: one ignore file per supported minor version
    spec = SpecifierSet(runtime["requires_ansible"])
    assert any(s.operator in ("<", "<=") for s in spec), "requires_ansible needs an upper bound"
    supported = {"ignore-2.%d.txt" % m for m in range(9, 40) if spec.contains("2.%d.0" % m)}
    assert supported and supported == ignores, (runtime["requires_ansible"], sorted(ignores))
    assert spec.contains(ANSIBLE_CORE), "the ansible-core under test (%s) is not supported" % ANSIBLE_CORE


def test_dependency_is_enforced_offline(tmp_path, package_home, dist):
    """Alone in an empty path, the tarball does not install: its dependency is declared and not found offline."""
    coll = tmp_path / "collections"
    proc = run(_galaxy("install", dist, "-p", coll, "--offline"), tmp_path, clean_env(package_home, coll), ok=False)
    assert proc.returncode != 0
    assert "community.general" in proc.stdout + proc.stderr
    assert not (coll / "ansible_collections" / "gpuops").exists()


def test_installed_from_the_empty_path_only(installed):
    listing = run(_galaxy("list", "--format", "json"), installed["cwd"], installed["env"]).stdout
    found = {
        name: path for path, colls in json.loads(listing).items() for name in colls if not name.startswith("ansible.")
    }
    prefix = str(installed["coll"])
    assert set(found) == {FQCN} | set(GALAXY["dependencies"]), found
    assert all(p.startswith(prefix) for p in found.values()), found


def test_offline_inspection_from_the_installed_collection(installed, tmp_path):
    env, cwd = installed["env"], installed["cwd"]
    sim, report = tmp_path / "sim", tmp_path / "report"
    faults = "xid79:1,ib_port_down:1,psu_failure:1"
    run(
        [sys.executable, ROOT / "tools" / "simcluster" / "generate.py"]
        + ["--nodes", "8", "--out", sim, "--seed", "7", "--faults", faults, "--jobs", "1"],
        cwd,
        env,
    )
    proc = run(
        ["ansible-playbook", "%s.inspect" % FQCN, "-i", sim / "inventory", "-e", "gpuops_report_dir=%s" % report],
        cwd,
        env,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    for bad in ("couldn't resolve", "does not support Ansible version", "Traceback"):
        assert bad not in out, bad
    # nothing of the checkout's collection is used (the checkout's venv runs ansible-playbook, so its path may
    # appear in a library's warning; any other path under the checkout may not)
    leaked = re.findall(re.escape(str(ROOT)) + r"(?!/\.venv/)\S*", out)
    assert not leaked, leaked
    for name in ("report.json", "report.md", "report.html", "gpuops.prom"):
        assert (report / name).stat().st_size > 0, name
    doc = json.loads((report / "report.json").read_text())
    key = json.loads((sim / "answer_key.json").read_text())
    assert doc["summary"]["nodes"] == 8
    for host, expected in key["hosts"].items():
        got = {(f["check"], f["severity"]) for f in doc["nodes"][host]["findings"]}
        if expected:
            assert {(e["check"], e["severity_hint"]) for e in expected} <= got, (host, got)
        else:
            assert not {sev for _check, sev in got} & {"P0", "P1", "P2"}, (host, got)
    assert sum(doc["summary"]["severity"].values()) >= sum(len(e) for e in key["hosts"].values())


def test_shipped_playbooks_resolve_every_module(installed):
    """--syntax-check of every shipped playbook (module names are resolved at parse time), and the borrowed power
    modules of roles/replace/tasks/power.yml (included dynamically) from the installed dependency."""
    names = sorted(p.stem for p in (installed["path"] / "playbooks").glob("*.yml") if p.stem not in NEEDS_OPTIONAL)
    assert "inspect" in names and "replace" in names
    proc = run(
        ["ansible-playbook", "--syntax-check"] + ["%s.%s" % (FQCN, n) for n in names],
        installed["cwd"],
        installed["env"],
    )
    assert proc.stdout.count("playbook: ") == len(names), proc.stdout
    power = (installed["path"] / "roles" / "replace" / "tasks" / "power.yml").read_text()
    borrowed = sorted({m for m in ("community.general.redfish_command", "community.general.ipmi_power") if m in power})
    assert borrowed
    docs = json.loads(
        run(["ansible-doc", "-t", "module", "--json"] + borrowed, installed["cwd"], installed["env"]).stdout
    )
    for m in borrowed:
        assert docs[m]["doc"]["filename"].startswith(str(installed["coll"])), docs[m]["doc"]["filename"]


def _documented(installed, ptype: str) -> dict:
    proc = run(["ansible-doc", "-t", ptype, "-l", FQCN, "--json"], installed["cwd"], installed["env"])
    return json.loads(proc.stdout or "{}")


def _jinja_plugin_names(installed, sub: str) -> set:
    """The filter / test names the installed plugin files export (FilterModule().filters(), TestModule().tests())."""
    code = (
        "import importlib, json, pathlib, sys\n"
        "base, sub, ns, name = sys.argv[1:5]\n"
        "out = set()\n"
        "for p in sorted(pathlib.Path(base, 'ansible_collections', ns, name, 'plugins', sub).glob('*.py')):\n"
        "    if p.stem == '__init__':\n"
        "        continue\n"
        "    m = importlib.import_module('ansible_collections.%s.%s.plugins.%s.%s' % (ns, name, sub, p.stem))\n"
        "    cls = getattr(m, 'FilterModule' if sub == 'filter' else 'TestModule')\n"
        "    out |= set((cls().filters() if sub == 'filter' else cls().tests()).keys())\n"
        "print(json.dumps(sorted(out)))\n"
    )
    env = dict(installed["env"], PYTHONPATH=str(installed["coll"]))
    args = [sys.executable, "-c", code, installed["coll"], sub, GALAXY["namespace"], GALAXY["name"]]
    return set(json.loads(run(args, installed["cwd"], env).stdout))


def test_every_plugin_is_documented_and_renders(installed):
    plugins = installed["path"] / "plugins"
    modules = {p.stem for p in (plugins / "modules").glob("*.py") if p.stem != "__init__"}
    actions = {p.stem for p in (plugins / "action").glob("*.py") if p.stem != "__init__"}
    assert actions <= modules, "action plugins without a documented module stub: %s" % sorted(actions - modules)
    checked = 0
    for sub, ptype in DOC_TYPES.items():
        files = [p for p in (plugins / sub).glob("*.py") if p.stem != "__init__"] if (plugins / sub).is_dir() else []
        if not files:
            continue
        if sub in ("filter", "test"):
            expected = _jinja_plugin_names(installed, sub)
        else:
            expected = {p.stem for p in files}
        listed = _documented(installed, ptype)
        names = {n.split(".", 2)[2] for n in listed}
        assert names == expected, (ptype, sorted(expected - names), sorted(names - expected))
        fq = sorted("%s.%s" % (FQCN, n) for n in expected)
        docs = json.loads(run(["ansible-doc", "-t", ptype, "--json"] + fq, installed["cwd"], installed["env"]).stdout)
        for n in fq:
            doc = (docs.get(n) or {}).get("doc") or {}
            assert doc.get("short_description") and doc.get("description"), (ptype, n)
            if ptype == "module":
                assert docs[n].get("examples") and docs[n].get("return") is not None, (ptype, n)
        text = run(["ansible-doc", "-t", ptype] + fq, installed["cwd"], installed["env"])
        for n in fq:
            assert "> %s %s " % (ptype.upper(), n) in text.stdout, (ptype, n)
        assert "ERROR" not in text.stderr and "Traceback" not in text.stderr, text.stderr[-2000:]
        checked += len(fq)
    assert checked >= len(modules) + 1


def test_every_role_is_documented_and_renders(installed):
    roles = sorted(p.parent.parent.name for p in (installed["path"] / "roles").glob("*/meta/argument_specs.yml"))
    all_roles = sorted(p.name for p in (installed["path"] / "roles").iterdir() if p.is_dir())
    assert roles == all_roles, "roles without meta/argument_specs.yml: %s" % sorted(set(all_roles) - set(roles))
    listed = _documented(installed, "role")
    assert sorted(n.split(".", 2)[2] for n in listed) == roles
    fq = ["%s.%s" % (FQCN, r) for r in roles]
    text = run(["ansible-doc", "-t", "role"] + fq, installed["cwd"], installed["env"]).stdout
    for n in fq:
        assert "> ROLE: *%s* (%s" % (n, installed["path"]) in text, n
    assert text.count("ENTRY POINT: *main*") == len(roles)


def test_nothing_was_written_into_the_installed_collection(installed):
    """Last: the runs above left the installed files exactly as shipped (no bytecode, state or reports in them)."""
    proc = run(_galaxy("verify", "--offline", FQCN), installed["cwd"], installed["env"], ok=False)
    assert proc.returncode == 0 and "modified content" not in proc.stdout, proc.stdout[-3000:]


def _doc_figures():
    """docs/install.md's "About N files: a X MB tarball, Y MB unpacked"."""
    text = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    m = re.search(r"About ([\d,]+) files: a ([\d.]+) MB tarball, ([\d.]+) MB unpacked", text)
    assert m, "docs/install.md no longer states the tarball's file count and sizes"
    return int(m.group(1).replace(",", "")), float(m.group(2)) * 1e6, float(m.group(3)) * 1e6


def test_install_doc_states_the_real_size_and_file_count(dist):
    """The figures docs/install.md gives are the real build's, within 3 % (issue 41: they were wrong)."""
    files = [m for m in _members(dist).values() if m.isfile()]
    real = (len(files), dist.stat().st_size, sum(m.size for m in files))
    doc = _doc_figures()
    for what, d, r in zip(("files", "tarball bytes", "unpacked bytes"), doc, real):
        assert abs(d - r) <= 0.03 * r, "docs/install.md says %s %s, the build has %s" % (what, d, r)


def test_runtime_directories_never_ship(tmp_path, package_home):
    """A checkout's state/ (the default state dir: audit log, ledger, backups), captures/ and reports/ are left
    out by galaxy.yml's build_ignore: a real `ansible-galaxy collection build` of a small tree holding them."""
    tree = tmp_path / "src"
    for rel in ("state/audit/audit.log", "state/backups/objects/ab", "captures/gpu-node-07/x/nvidia-smi.xml",
                "reports/report.json", ".sim/captures/n/meta.json", "plugins/README.md", "docs/x.md"):  # fmt: skip
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text("x\n", encoding="utf-8")
    shutil.copy(ROOT / "galaxy.yml", tree / "galaxy.yml")
    for name in ("README.md", "LICENSE"):
        shutil.copy(ROOT / name, tree / name)
    out = tmp_path / "dist"
    run(_galaxy("build", tree, "--output-path", out), tmp_path, clean_env(package_home))
    names = set(_members(out / TARBALL))
    leaked = sorted(n for n in names if n.split("/")[0] in ("state", "captures", "reports", ".sim"))
    assert not leaked, leaked
    assert "plugins/README.md" in names and "docs/x.md" in names


def test_install_with_p_inside_the_checkout_works_as_documented(tmp_path, package_home, dist):
    """docs/install.md's command for `-p` inside a checkout installs there (a plain `-p` under this checkout's
    ansible.cfg finds build/'s link and says "Nothing to do")."""
    text = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    assert "ANSIBLE_COLLECTIONS_PATH=./collections ansible-galaxy collection install --offline -p ./collections" in text
    env = clean_env(package_home, extra={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")})
    plain = run(_galaxy("install", "--offline", "--no-deps", "-p", tmp_path / "plain", dist), ROOT, env)
    assert "Nothing to do" in plain.stdout  # the trap the doc describes (build/ is on the configured path)
    coll = tmp_path / "collections"
    env["ANSIBLE_COLLECTIONS_PATH"] = str(coll)
    run(_galaxy("install", "--offline", "--no-deps", "-p", coll, dist), ROOT, env)
    assert (coll / "ansible_collections" / "gpuops" / "cluster" / "MANIFEST.json").is_file()
