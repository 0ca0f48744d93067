"""The layers of docs/architecture.md, checked on every #include.

The table between the `layers:begin` and `layers:end` markers of
docs/architecture.md says which folders the code of each folder may include;
every production source (not tests/, bench/) is scanned, and an include that
the table does not allow fails this test, naming the file, the line and the
rule. The build enforces most of it too (each library exports only its own
headers: hvd_export_headers in CMakeLists.txt); this test also covers the
folders inside one library (runtime/engine may not include runtime/).
"""
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
SOURCE_SUFFIXES = (".h", ".cc", ".cu")
NOT_CHECKED = ("tests/", "bench/", "python/", "fuzz/")  # test code: includes what it tests
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def read_table(text):
    """{folder: set of folders it may include} from the marked table."""
    match = re.search(r"<!-- layers:begin -->(.*?)<!-- layers:end -->", text, re.S)
    if not match:
        raise AssertionError(f"{DOC}: no <!-- layers:begin --> ... <!-- layers:end --> table")
    table = {}
    for line in match.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[0].startswith("`"):
            continue
        folder = cells[0].strip("`")
        allowed = {a.strip().strip("`") for a in cells[1].split(",")} - {"", "nothing"}
        table[folder] = allowed
    return table


def folder_of(path, table):
    """The longest folder of the table that holds `path`, or None."""
    best = None
    for folder in table:
        if path.startswith(folder + "/") and (best is None or len(folder) > len(best)):
            best = folder
    return best


def target_of(include, table):
    """The folder an include names: generated protobuf headers belong to
    proto/, hvd/codes.h to common/, the other hvd/ headers to the public
    headers of runtime/include; None for a header beside the includer."""
    if include.startswith("hvd/v1/"):
        return "proto"
    if include == "hvd/codes.h":
        return "common"
    if include.startswith("hvd/"):
        return "runtime/include"
    if "/" not in include:
        return None
    return folder_of(include, table) or include.split("/")[0]


def violations(root, table, files):
    found = []
    for rel in files:
        if rel.startswith(NOT_CHECKED) or not rel.endswith(SOURCE_SUFFIXES):
            continue
        here = folder_of(rel, table)
        if here is None:
            found.append(f"{rel}: its folder is not in the table of {DOC.name}")
            continue
        text = (root / rel).read_text(errors="replace")
        for match in INCLUDE.finditer(text):
            target = target_of(match.group(1), table)
            if target is None or target == here or target in table[here]:
                continue
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"{rel}:{line}: includes \"{match.group(1)}\" ({target}/), "
                         f"but {here}/ may include only: {', '.join(sorted(table[here])) or 'nothing'}")
    return found


def tracked_sources():
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:  # not a git checkout: every file on disk
        return [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file()
                and "build" not in p.relative_to(ROOT).parts[:1]]
    return out.stdout.split()


def test_every_include_follows_the_table():
    table = read_table(DOC.read_text())
    found = violations(ROOT, table, tracked_sources())
    assert not found, "includes that break the layers of docs/architecture.md:\n" + "\n".join(found)


def test_an_upward_include_is_caught(tmp_path):
    table = read_table(DOC.read_text())
    (tmp_path / "transports").mkdir()
    (tmp_path / "transports" / "bad.cc").write_text('#include "common/status.h"\n'
                                                    '#include "hvd/c_api.h"\n'
                                                    '#include "runtime/runtime.h"\n')
    (tmp_path / "runtime" / "engine").mkdir(parents=True)
    (tmp_path / "runtime" / "engine" / "up.cc").write_text('#include "runtime/op_request.h"\n')
    found = violations(tmp_path, table, ["transports/bad.cc", "runtime/engine/up.cc"])
    assert len(found) == 3, found
    assert 'transports/bad.cc:2: includes "hvd/c_api.h" (runtime/include/)' in found[0]
    assert "transports/bad.cc:3:" in found[1]
    assert "runtime/engine/up.cc:1:" in found[2]


def test_every_source_folder_is_in_the_table():
    table = read_table(DOC.read_text())
    unknown = sorted({rel.rsplit("/", 1)[0] for rel in tracked_sources()
                      if rel.endswith(SOURCE_SUFFIXES) and not rel.startswith(NOT_CHECKED)
                      and folder_of(rel, table) is None})
    assert not unknown, f"folders missing from the table of {DOC.name}: {unknown}"
    missing = sorted(f for f in table if not (ROOT / f).is_dir())
    assert not missing, f"the table of {DOC.name} names folders that do not exist: {missing}"
