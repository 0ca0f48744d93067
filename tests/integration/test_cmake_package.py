"""find_package(hvd) (README "A five-line example"): the build is installed
into a staging folder (DESTDIR), and the README's C++ block and CMake block,
taken from README.md as they are, are configured, built against the
installed package and run under hvdrun at 2 ranks."""
import pathlib
import re
import subprocess

from conftest import BUILD_DIR, run

SOURCE = pathlib.Path(__file__).resolve().parents[2]


def readme_block(language):
    text = (SOURCE / "README.md").read_text()
    section = text[text.index("## A five-line example"):]
    match = re.search(r"```" + language + r"\n(.*?)```", section, re.S)
    assert match, f"README.md's five-line example has no {language} block"
    return match.group(1)


def test_the_readme_example_builds_with_find_package_and_runs(tmp_path):
    stage = tmp_path / "stage"
    r = run(["cmake", "--install", str(BUILD_DIR)], timeout=120,
            env={"DESTDIR": str(stage)})
    assert r.returncode == 0, r.stdout + r.stderr
    prefixes = [p.parents[3] for p in stage.rglob("cmake/hvd/hvdConfig.cmake")]
    assert len(prefixes) == 1, f"no single hvdConfig.cmake under {stage}: {prefixes}"
    prefix = prefixes[0]
    libs = sorted(p.name for p in (prefix / "lib").glob("libhvd.so*"))
    assert "libhvd.so" in libs and any(re.fullmatch(r"libhvd\.so\.\d+", n) for n in libs), libs
    assert (prefix / "include" / "hvd" / "hvd.h").is_file()

    project = tmp_path / "demo"
    project.mkdir()
    (project / "demo.cc").write_text(readme_block("cpp"))
    (project / "CMakeLists.txt").write_text(readme_block("cmake"))
    out = tmp_path / "out"
    r = run(["cmake", "-S", str(project), "-B", str(out), f"-DCMAKE_PREFIX_PATH={prefix}"],
            timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    r = run(["cmake", "--build", str(out)], timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    needed = subprocess.run(["readelf", "-d", str(out / "demo")], capture_output=True, text=True)
    assert re.search(r"NEEDED.*\[libhvd\.so\.\d+\]", needed.stdout), needed.stdout
    assert str(prefix / "lib") in needed.stdout, "the demo loads the installed libhvd.so"

    r = run([str(BUILD_DIR / "bin" / "hvdrun"), "-np", "2", str(out / "demo")], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    # Ranks 0 and 1 average to 0.5 on both.
    for rank in (0, 1):
        assert f"rank {rank} of 2: 0.5" in r.stdout, r.stdout
