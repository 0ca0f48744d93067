"""README's two commands (issue 30, "the first ten minutes"): .ci/run runs
exactly the test command; the first command installs and builds only what
the main job needs, the test command everything else."""
import pathlib
import re

REPO = pathlib.Path(__file__).resolve().parents[2]
# Only the tests, fuzzers, benchmarks and optional tools use these.
TEST_ONLY = {"catch2", "python3-pytest", "clang", "libclang-rt-14-dev", "slurm-wlm", "munge",
             "iptables", "libnetfilter-queue-dev", "python3-matplotlib", "python3-torchvision"}
# The build and the main job (hvdrun -np 2 /usr/bin/python3 examples/pytorch_mnist.py).
MAIN_JOB = {"build-essential", "cmake", "libgrpc++-dev", "libgloo-dev", "python3-torch",
            "python3-numpy"}


def readme_commands():
    section = (REPO / "README.md").read_text().split("## The two commands", 1)[1]
    section = section.split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.*?)\n```", section, re.S)
    assert len(commands) == 2, commands
    return commands


def package_lists():
    text = (REPO / "deploy" / "install-deps.sh").read_text()
    lists = {}
    for name in ("packages", "test_packages"):
        body = re.search(rf"^{name}=\((.*?)\)", text, re.S | re.M).group(1)
        lists[name] = set(re.sub(r"#.*", "", body).split())
    return lists["packages"], lists["test_packages"]


def test_ci_runs_exactly_the_readme_test_command():
    ci = [line for line in (REPO / ".ci" / "run").read_text().splitlines()
          if line and not line.startswith(("#", "set ", "cd "))]
    assert ci == [readme_commands()[1]]


def test_the_first_command_builds_no_tests_and_the_second_builds_them():
    first, second = readme_commands()
    assert first.startswith("bash deploy/install-deps.sh && cmake -S . -B build && "), first
    assert "HVD_BUILD_TESTS" not in first
    assert second.startswith("bash deploy/install-deps.sh --tests && "), second
    assert "-DHVD_BUILD_TESTS=ON" in second
    cmake = (REPO / "CMakeLists.txt").read_text()
    assert re.search(r'option\(HVD_BUILD_TESTS "[^"]*" OFF\)', cmake), "a plain configure builds tests"
    assert re.search(r'option\(HVD_BUILD_BENCH "[^"]*" OFF\)', cmake)


def test_install_deps_keeps_the_test_packages_for_the_test_command():
    main, tests = package_lists()
    assert MAIN_JOB <= main, MAIN_JOB - main
    assert not main & TEST_ONLY, main & TEST_ONLY
    assert TEST_ONLY <= tests, TEST_ONLY - tests
