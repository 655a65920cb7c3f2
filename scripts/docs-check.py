#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Checks README.md and Documentation/ against the code, for the kinds of
drift a reader found: patches cited by number or by a subject no patch has,
make targets and BENCH_/RNULL_ settings the harness does not have, files
that do not exist, and parameter and attribute tables that differ from the
driver's. Prints one "ok" or "FAILED" line a check (the lines of make check's
host checks); exits non-zero if one failed. Run from anywhere."""

import glob
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(path):
    with open(os.path.join(REPO, path)) as f:
        return f.read()


DOCS = ["README.md"] + sorted(
    os.path.relpath(p, REPO) for p in glob.glob(f"{REPO}/Documentation/*.rst"))
TEXT = {doc: read(doc) for doc in DOCS}
results = []


def check(name, problems):
    results.append((name, list(dict.fromkeys(problems))))


def flat(text):
    return re.sub(r"\s+", " ", text)


# Patches cited by number ("patch 0018", "0046-0048") go stale with every
# regeneration of the series; by subject, the subject must exist.
subjects = set()
for path in glob.glob(f"{REPO}/patches/*.patch") + glob.glob(f"{REPO}/patches/fixes/*.patch"):
    with open(path) as f:
        head = f.read(4000)
    m = re.search(r"^Subject: (?:\[[^]]*\] )?(.*(?:\n .*)*)", head, re.M)
    if m:
        subjects.add(flat(m.group(1)).strip())
problems = []
for doc, text in TEXT.items():
    for m in re.finditer(r"\bpatch(?:es)? \d{4}\b|\b\d{4}-\d{4}\b(?= )", text):
        problems.append(f"{doc}: a patch cited by number: {m.group(0)!r}")
    for m in re.finditer(r'(?:"|``)((?:rust|block)(?:: [^":`]+)+: [^"`]+)(?:"|``)', flat(text)):
        if m.group(1) not in subjects:
            problems.append(f"{doc}: no patch has the subject {m.group(1)!r}")
if not subjects:
    problems.append("no patches found in patches/")
check("patches are cited by subjects that exist", problems)

# make targets: the harness's, and the kernel's in the in-tree recipe.
makefile = read("Makefile")
targets = set(re.findall(r"^([a-z][a-z-]*):", makefile, re.M))
kbuild_targets = {"olddefconfig", "all", "modules_install", "install", "menuconfig"}
problems = []
for doc, text in TEXT.items():
    for m in re.finditer(r"(?:``|`|^    |^\$ )make (?:[A-Z_]+=\S+ )*([a-z][a-z_-]*)\b", text, re.M):
        target = m.group(1)
        if target not in targets | kbuild_targets:
            problems.append(f"{doc}: make {target}: no such target in Makefile")
check("make targets named in the documentation exist", problems)

# Settings: every BENCH_* and RNULL_* named must be read by the harness.
code = ""
for pattern in ["Makefile", ".ci/run", "scripts/*", "bench/*.sh", "bench/*.py",
                "tests/*.sh", "tests/*.py"]:
    for path in glob.glob(os.path.join(REPO, pattern)):
        if os.path.isfile(path):
            with open(path, errors="replace") as f:
                code += f.read()
problems = []
for doc, text in TEXT.items():
    for var in sorted(set(re.findall(r"\b((?:BENCH|RNULL)_[A-Z0-9_]*[A-Z0-9])\b", text))):
        if not re.search(rf"\b{var}\b", code):
            problems.append(f"{doc}: {var} is read by no script")
check("settings named in the documentation exist", problems)

# Files of the repository named in the documentation.
problems = []
for doc, text in TEXT.items():
    if doc == "Documentation/rnull.rst":
        continue  # the in-tree document names files of the kernel tree
    for m in re.finditer(r"(?<![\w/.-])((?:scripts|tests|bench|config|Documentation|patches)/[\w./*-]*[\w*])", text):
        path = m.group(1)
        if path.startswith("Documentation/block") or path == "scripts/config":
            continue
        if glob.glob(os.path.join(REPO, path)):
            continue
        problems.append(f"{doc}: {path} does not exist")
    for m in re.finditer(r"shared/docs|\.\./shared", text):
        problems.append(f"{doc}: refers to a file outside the repository")
check("files named in the documentation exist", problems)

# The parameter table of Documentation/rnull.rst against module! in rnull.rs.
RUST_TYPES = {"u32": "uint", "i32": "int", "u64": "ulong", "bool": "bool"}
params = {}
for m in re.finditer(r"^        (\w+): ([\w:<>]+) \{\n            default: ([^,]+),",
                     read("rnull.rs"), re.M):
    name, ty, default = m.groups()
    ty = RUST_TYPES.get(ty, "string")
    default = {"false": "0", "true": "1"}.get(default, default)
    if ty == "string":
        default = '""'
    params[name] = (ty, default)
rst = read("Documentation/rnull.rst")
section = rst.split("Module parameters\n=================", 1)[1].split("\nconfigfs\n", 1)[0]
documented = {}
for m in re.finditer(r"^``(\w+)``\s+(\w+)\s+(\S+)\s", section, re.M):
    documented[m.group(1)] = (m.group(2), m.group(3))
for m in re.finditer(r"``(\w+)`` \((\w+), default (-?\w+)\)", section):
    documented[m.group(1)] = (m.group(2), m.group(3))
problems = [] if len(params) > 30 else ["the parameters of rnull.rs were not found"]
for name in sorted(set(params) | set(documented)):
    if name not in documented:
        problems.append(f"parameter {name} is not in Documentation/rnull.rst")
    elif name not in params:
        problems.append(f"Documentation/rnull.rst lists a parameter {name} the module lacks")
    elif params[name] != documented[name]:
        problems.append(f"parameter {name}: {documented[name]} in Documentation/rnull.rst, "
                        f"{params[name]} in rnull.rs")
check("the parameter table matches the module's parameters", problems)

# The attribute table against configfs.rs's one table.
table = read("configfs.rs").split("device_attributes! {", 1)[1].split("}", 1)[0]
attributes = set(re.findall(r"^\s*(\w+): \d+ =>", table, re.M))
section = rst.split("``power``                 bool", 1)[1].split("\n\n", 1)[0]
named = set(re.findall(r"^``(\w+)``", "``power``" + section, re.M))
wildcards = re.findall(r"^``\w+``, ``(\w+)\*``", section, re.M)
problems = [f"Documentation/rnull.rst lists an attribute {a} configfs.rs lacks"
            for a in sorted(named - attributes)]
if len(attributes) < 30:
    problems.append("the attribute table of configfs.rs was not found")
for a in sorted(attributes - named):
    if not any(a.startswith(w) for w in wildcards):
        problems.append(f"attribute {a} is not in Documentation/rnull.rst")
check("the attribute table matches configfs.rs", problems)

# The table of make bench's defaults per mode against bench/bench.sh.
VARS = {"reps": "BENCH_REPS", "runtime": "BENCH_RUNTIME", "rws": "BENCH_RW",
        "bss": "BENCH_BS", "qds": "BENCH_IODEPTH", "njs": "BENCH_NUMJOBS",
        "mems": "BENCH_MEMORY", "cms": "BENCH_COMPLETION", "poll_bs": "BENCH_POLL_BS",
        "zoned": "BENCH_ZONED", "zbss": "BENCH_ZBS", "nomem_bs": "BENCH_NOMEM_BS"}
bench = read("bench/bench.sh")
code_modes = {}
for mode in ("quick", "default", "full"):
    m = re.search(rf"^{mode}\)\n((?:\t.*\n)+?)\t;;", bench, re.M)
    code_modes[mode] = dict(re.findall(r"(\w+)=(\S+)", m.group(1))) if m else {}
problems = [] if all(code_modes.values()) else ["the modes of bench/bench.sh were not found"]
rows = 0
for m in re.finditer(r"^``(BENCH_\w+)``(?: \([^)]*\))?\s+(\S+)\s+(\S+)\s+(\S+)\s*$",
                     TEXT["Documentation/rnull-benchmarking.rst"], re.M):
    var, doc_values = m.group(1), m.group(2, 3, 4)
    name = next((k for k, v in VARS.items() if v == var), None)
    if name is None:
        continue
    rows += 1
    for mode, value in zip(("quick", "default", "full"), doc_values):
        if code_modes[mode].get(name) != value:
            problems.append(f"{var} in {mode} mode: {value} in Documentation/rnull-benchmarking.rst, "
                            f"{code_modes[mode].get(name)} in bench/bench.sh")
if rows < len(VARS):
    problems.append(f"the table of defaults has {rows} of the {len(VARS)} settings of the modes")
check("the defaults of make bench match bench/bench.sh", problems)

# The reStructuredText of Documentation/ must parse without a warning (the
# kernel's Sphinx build reads Documentation/rnull.rst as
# Documentation/block/rnull.rst).
problems = []
try:
    import docutils.core
    import docutils.utils
    for doc in DOCS[1:]:
        try:
            docutils.core.publish_doctree(
                TEXT[doc], source_path=doc,
                settings_overrides={"halt_level": 2, "report_level": 5})
        except docutils.utils.SystemMessage as e:
            problems.append(f"{doc}: {e}")
except ImportError:
    problems.append("python3-docutils is not installed (scripts/setup.sh installs it)")
check("the reStructuredText of Documentation/ parses", problems)

failed = 0
for name, problems in results:
    if problems:
        failed += 1
        print(f"FAILED  docs: {name}")
        for p in problems:
            print(f"        {p}")
    else:
        print(f"ok      docs: {name}")
sys.exit(1 if failed else 0)
