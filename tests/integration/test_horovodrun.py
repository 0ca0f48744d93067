"""horovodrun (a link to hvdrun; docs/launcher.md): a Horovod script and a
horovodrun command line run as they are, in compatibility mode. hvdrun
without --horovod-compat says once what to add when the workers cannot
import horovod, and an unknown flag gets "did you mean"."""
import pathlib

from conftest import BUILD_DIR, run

SOURCE = pathlib.Path(__file__).resolve().parents[2]
ENV = {"PYTHONPATH": str(SOURCE / "python"),
       "HVD_LIBRARY": str(BUILD_DIR / "lib" / "libhvd.so"),
       "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"}
HOROVOD_SCRIPT = ("import horovod.torch as hvd, torch; hvd.init(); "
                  "print('sum', hvd.rank(), hvd.allreduce(torch.ones(2) * (hvd.rank() + 1), "
                  "op=hvd.Sum).tolist())")


def test_horovodrun_runs_a_horovod_script_and_line_as_they_are():
    horovodrun = BUILD_DIR / "bin" / "horovodrun"
    assert horovodrun.is_symlink(), "the build makes bin/horovodrun"
    # A horovodrun line: --gloo is ignored with a note, the threshold is in MB.
    r = run([str(horovodrun), "--gloo", "-np", "2", "--fusion-threshold-mb", "32",
             "/usr/bin/python3", "-c", HOROVOD_SCRIPT], timeout=120, env=ENV)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "sum 0 [3.0, 3.0]" in r.stdout and "sum 1 [3.0, 3.0]" in r.stdout, r.stdout


def test_a_worker_without_horovod_gets_the_hint_once(hvdrun):
    r = run([hvdrun, "-np", "2", "/usr/bin/python3", "-c", HOROVOD_SCRIPT], timeout=120, env=ENV)
    assert r.returncode == 1, r.stdout + r.stderr
    hint = ("hvdrun: hint: the workers cannot import horovod: add --horovod-compat to run a "
            "Horovod script on hvd's Horovod API (or start it as horovodrun)")
    assert r.stderr.count(hint) == 1, r.stderr


def test_an_unknown_flag_gets_did_you_mean(hvdrun):
    r = run([hvdrun, "--fusion-treshold-mb", "32", "-np", "1", "/bin/true"], timeout=30)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == ("hvdrun: error: The following argument was not expected: "
                                "--fusion-treshold-mb (did you mean --fusion-threshold-mb?)")
