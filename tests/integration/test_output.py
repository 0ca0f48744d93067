"""Worker output under load (issue 29): every line of every rank arrives,
once and in order per rank, when hvdrun's stdout is a file and when its
reader is slow. The workers then wait in their writes, as on a terminal;
hvdrun's memory stays bounded, and a worker blocked on its pipe is not taken
for a hung one. A last line without a newline and binary bytes arrive as
they are."""
import os
import pathlib
import select
import subprocess
import sys
import threading
import time

from conftest import BUILD_DIR, child_env, kill_session

SOURCE = pathlib.Path(__file__).resolve().parents[2]
PY_ENV = {"PYTHONPATH": str(SOURCE / "python"),
          "HVD_LIBRARY": str(BUILD_DIR / "lib" / "libhvd.so"),
          "PYTHONDONTWRITEBYTECODE": "1"}

LINES = 1_000_000  # per rank
PAD = b"x" * (100 - len(b"r0-0000000-") - 1)  # a line is 100 bytes with its newline
# hvdrun's output memory is bounded (docs/launcher.md, "Output"): a few MiB
# of queues beside its ~25 MB at rest; it peaked at 127 MB when it dropped.
MAX_PEAK_RSS_MB = 64

# Each rank prints LINES lines "r<rank>-<7-digit number>-xxx...", fast.
FLOOD = ["sh", "-c", f'exec seq -f "r${{HVD_RANK}}-%07.0f-{PAD.decode()}" 0 {LINES - 1}']

# The same from an initialized worker (heartbeats running), timing its writes.
FLOOD_INITIALIZED = f"""
import sys, time
import hvd.numpy as hnp
hnp.init()
rank = hnp.rank()
out = sys.stdout.buffer
start = time.monotonic()
for first in range(0, {LINES}, 20000):
    out.write(b"".join(b"r%d-%07d-{PAD.decode()}\\n" % (rank, i)
                       for i in range(first, min(first + 20000, {LINES}))))
out.flush()
took = time.monotonic() - start
hnp.shutdown()
sys.stderr.write("wrote for %.1f s\\n" % took)
"""


class PeakRss:
    """Samples VmHWM (peak RSS) of a process until it ends: the last value read."""

    def __init__(self, pid):
        self.kb = 0
        self._pid = pid
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self):
        while True:
            try:
                with open(f"/proc/{self._pid}/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            self.kb = max(self.kb, int(line.split()[1]))
            except OSError:
                return
            time.sleep(0.02)

    def mb(self):
        self._thread.join(timeout=5)
        return self.kb / 1024


def check_every_line(data, ranks):
    """Each rank's LINES lines, once and in order, and nothing else."""
    lines = data.split(b"\n")
    assert lines[-1] == b"", "the output does not end with a newline"
    del lines[-1]
    for rank in range(ranks):
        prefix = b"[%d]<stdout>:" % rank
        got = [line for line in lines if line.startswith(prefix)]
        want = [b"%sr%d-%07d-%s" % (prefix, rank, i, PAD) for i in range(LINES)]
        if got != want:
            first = next((i for i, (g, w) in enumerate(zip(got, want)) if g != w),
                         min(len(got), len(want)))
            raise AssertionError(
                f"rank {rank}: {len(got)} of {LINES} lines; first difference at line {first}: "
                f"{got[first:first + 1]!r} instead of {want[first:first + 1]!r}")
    others = len(lines) - ranks * LINES
    assert others == 0, f"{others} other lines: {[l for l in lines if b'dropped' in l][:3]!r}"


def start(args, stdout, stderr, env=None):
    return subprocess.Popen(args, stdout=stdout, stderr=stderr, env=child_env(env),
                            start_new_session=True)


def wait(proc, timeout):
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_session(proc)
        proc.wait(timeout=10)
        raise AssertionError(f"hvdrun did not end within {timeout} s")


def test_every_line_of_two_fast_ranks_reaches_a_file(hvdrun, tmp_path):
    out_path = tmp_path / "out"
    err_path = tmp_path / "err"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        began = time.monotonic()
        proc = start([hvdrun, "-np", "2", *FLOOD], out, err)
        peak = PeakRss(proc.pid)
        code = wait(proc, 120)
        took = time.monotonic() - began
    errors = err_path.read_text(errors="replace")
    assert code == 0, errors
    check_every_line(out_path.read_bytes(), 2)
    print(f"\n2 x {LINES} lines to a file: {took:.1f} s, hvdrun peak RSS {peak.mb():.0f} MB")
    assert peak.mb() < MAX_PEAK_RSS_MB, errors


def test_a_slow_reader_holds_the_workers_back_and_gets_every_line(hvdrun, tmp_path):
    pause = 5.0  # more than twice the heartbeat timeout below
    err_path = tmp_path / "err"
    with open(err_path, "wb") as err:
        proc = start([hvdrun, "-np", "2", "--heartbeat-timeout-seconds", "2",
                      sys.executable, "-c", FLOOD_INITIALIZED],
                     subprocess.PIPE, err, env=PY_ENV)
        peak = PeakRss(proc.pid)
        deadline = time.monotonic() + 150
        fd = proc.stdout.fileno()
        chunks = []
        read = 0
        paused = False
        try:
            while True:
                if not paused and read >= (1 << 20):
                    # The workers block on their pipes meanwhile; heartbeats go on.
                    time.sleep(pause)
                    paused = True
                left = deadline - time.monotonic()
                assert left > 0, "hvdrun's output did not end within 150 s"
                if not select.select([fd], [], [], left)[0]:
                    continue
                chunk = os.read(fd, 64 * 1024)
                if not chunk:
                    break
                chunks.append(chunk)
                read += len(chunk)
                if paused and read % (4 << 20) < len(chunk):
                    time.sleep(0.02)  # then at most ~200 MB/s
            code = wait(proc, 30)
        finally:
            if proc.poll() is None:
                kill_session(proc)
                proc.wait(timeout=10)
            proc.stdout.close()
    errors = err_path.read_text(errors="replace")
    assert code == 0, errors
    assert "stopped responding" not in errors, errors
    check_every_line(b"".join(chunks), 2)
    # The workers waited in their writes through the pause.
    took = [float(line.split()[-2]) for line in errors.splitlines() if "wrote for" in line]
    assert len(took) == 2 and min(took) >= pause - 1, errors
    print(f"\nslow reader: the workers wrote for {took} s, hvdrun peak RSS {peak.mb():.0f} MB")
    assert peak.mb() < MAX_PEAK_RSS_MB, errors


def test_a_last_line_without_newline_and_binary_bytes_arrive(hvdrun):
    script = r"printf 'a\377\000b\r\n\n'; printf 'err\200' >&2; printf 'last'"
    proc = subprocess.run([hvdrun, "-np", "1", "sh", "-c", script], capture_output=True,
                          env=child_env(), timeout=60, start_new_session=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"[0]<stdout>:a\xff\x00b\r\n[0]<stdout>:\n[0]<stdout>:last\n"
    assert b"[0]<stderr>:err\x80\n" in proc.stderr, proc.stderr
