"""The layers of docs/architecture.md, checked on every #include.

The table between the `layers:begin` and `layers:end` markers of
docs/architecture.md says which folders the code of each folder may include;
this test reads it from there (the doc and the check cannot disagree) and
fails, naming the file, the line and the rule, when:

- a production source includes a header of the project (quoted or angle:
  "x/y.h", <x/y.h>, the public "hvd/..." headers) that its row does not allow,
  or a quoted header without a folder that does not lie beside it;
- a folder holding sources has no row of its own (only the header trees,
  folders under an `include/` or `compat/` folder, belong to the row above);
- the table allows a cycle between folders (a row's entries, followed row
  by row, lead back to it); an include that goes up a cycle is allowed only
  from the files its entry names, "(upward from a.h, b.cc)", and the entry
  must go away when those files stop including it;
- test code (tests/, bench/, fuzz/) includes a header of the project that no
  library exports: it may include only what hvd_export_headers puts on the
  libraries' include paths (the build has no source root on its path, so a
  header outside them does not compile; this says which one and why).

The build enforces most of it too (each library exports only its own
headers: hvd_export_headers in CMakeLists.txt); this test also covers the
folders inside one library (runtime/engine may not include runtime/).
"""
import os
import pathlib
import re
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
SOURCE_SUFFIXES = (".h", ".cc", ".cu", ".c")
TEST_CODE = ("tests/", "bench/", "fuzz/")  # checked against the exported headers
TEST_CODE_TOPS = tuple(t.rstrip("/") for t in TEST_CODE)
HEADER_TREES = {"include", "compat"}  # put on an include path as they are
PUBLIC_PREFIX = "hvd/"  # hvd/c_api.h, hvd/hvd.h, hvd/codes.h, hvd/v1/*.pb.h
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^">\n]+)[">]', re.MULTILINE)
ENTRY = re.compile(r"`([^`]+)`(?:\s*\(upward from ([^)]*)\))?")
EXPORT = re.compile(r"hvd_export_headers\(\s*([\w-]+)\s+([\w/]+)\s*\)")


class Table:
    """The marked table: `allowed[folder]` the folders a folder may include;
    `upward[folder][target]` the files of `folder` (relative to it) that may
    include `target` although it lies up a cycle."""

    def __init__(self, allowed, upward):
        self.allowed = allowed
        self.upward = upward

    def __iter__(self):
        return iter(self.allowed)

    def __contains__(self, folder):
        return folder in self.allowed

    def tops(self):
        return {f.split("/")[0] for f in self.allowed}


def read_table(text, where=DOC.name):
    match = re.search(r"<!-- layers:begin -->(.*?)<!-- layers:end -->", text, re.S)
    if not match:
        raise AssertionError(f"{where}: no <!-- layers:begin --> ... <!-- layers:end --> table")
    allowed, upward = {}, {}
    for line in match.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[0].startswith("`"):
            continue
        folder = cells[0].strip("`")
        if folder in allowed:
            raise AssertionError(f"{where}: two rows for `{folder}`")
        allowed[folder], upward[folder] = set(), {}
        for target, files in ENTRY.findall(cells[1]):
            if files:
                upward[folder][target] = {f.strip() for f in files.split(",") if f.strip()}
            else:
                allowed[folder].add(target)
    return Table(allowed, upward)


def reaches(table, start, goal):
    """Whether `goal` is reachable from `start` through plain entries."""
    seen, todo = set(), [start]
    while todo:
        folder = todo.pop()
        for target in table.allowed.get(folder, ()):
            if target == goal:
                return True
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return False


def table_problems(table):
    """Cycles, entries naming no row, upward entries that are not upward."""
    found = []
    for folder in sorted(table):
        for target in sorted(table.allowed[folder] | set(table.upward[folder])):
            if target not in table:
                found.append(f"`{folder}` may include `{target}`, which has no row")
        for target in sorted(table.allowed[folder]):
            if target == folder or reaches(table, target, folder):
                found.append(f"cycle: `{folder}` may include `{target}`, which leads back to "
                             f"`{folder}` (folders must form layers: move the files that "
                             f"close the cycle, or name them: \"(upward from a.h)\")")
        for target in sorted(table.upward[folder]):
            if not reaches(table, target, folder):
                found.append(f"`{folder}` may include `{target}` \"upward\", but `{target}` "
                             f"does not lead back to `{folder}`: make it a plain entry")
    return found


def folder_of(path, table):
    """The longest folder of the table that holds `path`, or None."""
    best = None
    for folder in table:
        if path.startswith(folder + "/") and (best is None or len(folder) > len(best)):
            best = folder
    return best


def missing_row(rel, table):
    """Whether the folder of `rel` needs a row it does not have."""
    folder = os.path.dirname(rel)
    return folder not in table and not HEADER_TREES & set(folder.split("/"))


def is_project_header(include, tops):
    return include.startswith(PUBLIC_PREFIX) or include.split("/")[0] in tops


def target_of(include, table):
    """The folder an include names: generated protobuf headers belong to
    proto/, hvd/codes.h to common/, the other hvd/ headers to the public
    headers of runtime/include."""
    if include.startswith("hvd/v1/"):
        return "proto"
    if include == "hvd/codes.h":
        return "common"
    if include.startswith(PUBLIC_PREFIX):
        return "runtime/include"
    return folder_of(include, table) or include.split("/")[0]


def includes(root, rel):
    """(line, quote, header) of every #include of `rel`."""
    text = (root / rel).read_text(errors="replace")
    for match in INCLUDE.finditer(text):
        yield text.count("\n", 0, match.start()) + 1, match.group(1), match.group(2)


def shown(quote, header):
    return f'"{header}"' if quote == '"' else f"<{header}>"


def beside(root, rel, header):
    return (root / os.path.dirname(rel) / header).is_file()


def violations(root, table, files):
    """Production includes the table does not allow, folders with no row."""
    found, tops, rowless = [], table.tops() | set(TEST_CODE_TOPS), set()
    for rel in files:
        if rel.startswith(TEST_CODE) or not rel.endswith(SOURCE_SUFFIXES):
            continue
        here = folder_of(rel, table)
        if here is None or missing_row(rel, table):
            if os.path.dirname(rel) not in rowless:
                rowless.add(os.path.dirname(rel))
                found.append(f"{rel}: its folder {os.path.dirname(rel)}/ has no row in the "
                             f"table of {DOC.name}")
            continue
        for line, quote, header in includes(root, rel):
            if "/" not in header:
                if quote == '"' and not beside(root, rel, header):
                    found.append(f"{rel}:{line}: includes \"{header}\", which is not beside it "
                                 f"(name the header's folder)")
                continue
            if not is_project_header(header, tops):
                continue
            target = target_of(header, table)
            if target == here or target in table.allowed[here]:
                continue
            if target in table.upward[here]:
                files_up = table.upward[here][target]
                if os.path.relpath(rel, here) in files_up:
                    continue
                found.append(f"{rel}:{line}: includes {shown(quote, header)} ({target}/), which lies up a "
                             f"cycle: {here}/ may include it only from "
                             f"{', '.join(sorted(files_up))}")
                continue
            found.append(f"{rel}:{line}: includes {shown(quote, header)} ({target}/), but {here}/ may "
                         f"include only: {', '.join(sorted(table.allowed[here])) or 'nothing'}")
    return found


def stale_upward(root, table, files):
    """Upward entries naming a file that no longer includes the folder."""
    found, present = [], set(files)
    for folder in sorted(table):
        for target, names in sorted(table.upward[folder].items()):
            for name in sorted(names):
                rel = f"{folder}/{name}"
                if rel not in present:
                    found.append(f"`{folder}` may include `{target}` upward from {name}, "
                                 f"but {rel} does not exist: remove it from the row")
                elif not any(is_project_header(h, table.tops()) and target_of(h, table) == target
                             for _, _, h in includes(root, rel)):
                    found.append(f"`{folder}` may include `{target}` upward from {name}, "
                                 f"but {rel} no longer does: remove it from the row")
    return found


def exported_folders(root, files):
    """{folder: target} of every hvd_export_headers(TARGET FOLDER) call."""
    exported = {}
    for rel in files:
        if os.path.basename(rel) == "CMakeLists.txt":
            text = re.sub(r"#.*", "", (root / rel).read_text(errors="replace"))
            for target, folder in EXPORT.findall(text):
                if not folder.startswith("$"):
                    exported[folder] = target
    return exported


def unexported_includes(root, table, exported, files):
    """Includes of tests/, bench/ and fuzz/ of headers no library exports."""
    found, tops = [], table.tops() | set(TEST_CODE_TOPS)
    for rel in files:
        if not rel.startswith(TEST_CODE) or not rel.endswith(SOURCE_SUFFIXES):
            continue
        for line, quote, header in includes(root, rel):
            if "/" not in header:
                if quote == '"' and not beside(root, rel, header):
                    found.append(f"{rel}:{line}: includes \"{header}\", which is not beside it")
                continue
            if not is_project_header(header, tops) or header.startswith(PUBLIC_PREFIX):
                continue
            if any(header.startswith(folder + "/") for folder in exported):
                continue
            found.append(f"{rel}:{line}: includes {shown(quote, header)}, which no library exports "
                         f"(hvd_export_headers: {', '.join(sorted(exported))})")
    return found


def tracked_sources():
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                         cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:  # not a git checkout: every file on disk
        return [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file()
                and "build" not in p.relative_to(ROOT).parts[:1]]
    return [rel for rel in out.stdout.split() if (ROOT / rel).is_file()]


# ---- the tree ----

def test_the_table_has_layers():
    problems = table_problems(read_table(DOC.read_text()))
    assert not problems, f"the table of {DOC.name}:\n" + "\n".join(problems)


def test_every_include_follows_the_table():
    table, files = read_table(DOC.read_text()), tracked_sources()
    found = violations(ROOT, table, files) + stale_upward(ROOT, table, files)
    assert not found, "includes that break the layers of docs/architecture.md:\n" + "\n".join(found)


def test_every_source_folder_is_in_the_table():
    table = read_table(DOC.read_text())
    unknown = sorted({os.path.dirname(rel) for rel in tracked_sources()
                      if rel.endswith(SOURCE_SUFFIXES) and not rel.startswith(TEST_CODE)
                      and (folder_of(rel, table) is None or missing_row(rel, table))})
    assert not unknown, f"folders missing from the table of {DOC.name}: {unknown}"
    missing = sorted(f for f in table if not (ROOT / f).is_dir())
    assert not missing, f"the table of {DOC.name} names folders that do not exist: {missing}"


def test_exports_are_rows_and_test_code_includes_only_them():
    table, files = read_table(DOC.read_text()), tracked_sources()
    exported = exported_folders(ROOT, files)
    not_rows = sorted(f for f in exported if f not in table and f.split("/")[0] not in TEST_CODE_TOPS)
    assert not not_rows, f"exported folders with no row in {DOC.name}: {not_rows}"
    found = unexported_includes(ROOT, table, exported, files)
    assert not found, "test code including unexported headers:\n" + "\n".join(found)


# ---- the holes of issue 33, each in a small tree of its own ----

SMALL_DOC = """
<!-- layers:begin -->
| folder | may include |
| --- | --- |
| `common` | nothing |
| `transports` | `common` |
| `transports/gloo` | `common`, `transports` |
| `launcher` | `common`, `transports`, `launcher/elastic` (upward from main.cc) |
| `launcher/elastic` | `common`, `launcher` |
<!-- layers:end -->
"""


def write(root, files):
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return sorted(files)


def test_an_upward_include_is_caught(tmp_path):
    table = read_table(SMALL_DOC)
    files = write(tmp_path, {
        "transports/bad.cc": '#include "common/status.h"\n#include "hvd/c_api.h"\n'
                             '#include "launcher/cli.h"\n',
        "transports/gloo/up.cc": '#include "launcher/cli.h"\n'})
    found = violations(tmp_path, table, files)
    assert len(found) == 3, found
    assert 'transports/bad.cc:2: includes "hvd/c_api.h" (runtime/include/)' in found[0]
    assert "transports/bad.cc:3:" in found[1]
    assert "transports/gloo/up.cc:1:" in found[2]


def test_an_angle_include_crossing_layers_is_caught(tmp_path):
    table = read_table(SMALL_DOC)
    files = write(tmp_path, {"transports/gloo/angle.cc": "#include <vector>\n#include <gloo/context.h>\n"
                                                        "#include <launcher/cli.h>\n"
                                                        "# include <hvd/hvd.h>\n"})
    found = violations(tmp_path, table, files)
    assert [f.split(" (")[0] for f in found] == [
        "transports/gloo/angle.cc:3: includes <launcher/cli.h>",
        "transports/gloo/angle.cc:4: includes <hvd/hvd.h>"], found


def test_a_cycle_between_folders_is_refused(tmp_path):
    cyclic = read_table(SMALL_DOC.replace("| `transports` | `common` |",
                                          "| `transports` | `common`, `transports/gloo` |"))
    problems = table_problems(cyclic)
    assert len(problems) == 2 and all(p.startswith("cycle:") for p in problems), problems
    assert "`transports` may include `transports/gloo`" in problems[0]
    assert not table_problems(read_table(SMALL_DOC))
    # An upward include only from the files its entry names, and the entry
    # goes when they stop including it.
    table = read_table(SMALL_DOC)
    files = write(tmp_path, {"launcher/main.cc": '#include "launcher/elastic/policy.h"\n',
                             "launcher/cli.cc": '#include "launcher/elastic/options.h"\n',
                             "launcher/elastic/policy.cc": '#include "launcher/session.h"\n'})
    found = violations(tmp_path, table, files)
    assert len(found) == 1 and found[0].startswith("launcher/cli.cc:1:") and \
        "only from main.cc" in found[0], found
    assert not stale_upward(tmp_path, table, files)
    (tmp_path / "launcher/main.cc").write_text("int main() {}\n")
    assert "no longer does" in stale_upward(tmp_path, table, files)[0]


def test_a_folder_without_a_row_is_caught(tmp_path):
    table = read_table(SMALL_DOC.replace("| `launcher/elastic` | `common`, `launcher` |\n", "")
                       .replace(", `launcher/elastic` (upward from main.cc)", ""))
    files = write(tmp_path, {"launcher/elastic/policy.cc": '#include "launcher/session.h"\n',
                             "transports/gloo/compat/gloo/memory.h": "#pragma once\n",
                             "runtime/x.cc": "\n"})
    found = violations(tmp_path, table, files)
    assert found == ["launcher/elastic/policy.cc: its folder launcher/elastic/ has no row in "
                     f"the table of {DOC.name}",
                     f"runtime/x.cc: its folder runtime/ has no row in the table of {DOC.name}"], found


def test_test_code_including_an_unexported_header_is_caught(tmp_path):
    table = read_table(SMALL_DOC)
    files = write(tmp_path, {
        "CMakeLists.txt": "hvd_export_headers(hvd_common common)\n"
                          "# hvd_export_headers(hvd_launcher launcher)\n",
        "tests/CMakeLists.txt": "hvd_export_headers(hvd_test_support tests)\n",
        "tests/unit/a_test.cc": '#include "common/status.h"\n#include "hvd/hvd.h"\n'
                                '#include "tests/unit/util.h"\n#include "util.h"\n'
                                '#include "launcher/cli.h"\n#include <transports/gloo/x.h>\n',
        "tests/unit/util.h": "#pragma once\n",
        "bench/perf.cc": '#include "bench/perf_common.h"\n#include "perf_common.h"\n',
        "bench/perf_common.h": "#pragma once\n"})
    exported = exported_folders(tmp_path, files)
    assert exported == {"common": "hvd_common", "tests": "hvd_test_support"}
    found = unexported_includes(tmp_path, table, exported, files)
    assert [f.split(",")[0] for f in found] == [
        'bench/perf.cc:1: includes "bench/perf_common.h"',
        'tests/unit/a_test.cc:5: includes "launcher/cli.h"',
        "tests/unit/a_test.cc:6: includes <transports/gloo/x.h>"], found
