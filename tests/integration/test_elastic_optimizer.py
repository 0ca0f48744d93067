"""Elastic jobs that outgrow their start and elastic jobs whose ranks fall
out of step (issue 27, item 3; docs/elastic.md).

- A job that starts at one worker builds its DistributedOptimizer at size 1;
  it must still register its gradient hooks (as Horovod does in elastic
  jobs), or after growing to 2 the new worker submits gradients that rank 0
  never does and nothing trains: the job must go on at size 2 and end with
  parameters identical on both ranks, equal to a replay of the committed
  steps at the sizes they ran at.
- A no-progress verdict (docs/engine.md, "No progress") in an elastic job
  fails the pending ops on every rank; hvd.elastic.run resets once, and when
  the verdict comes again right after that reset the program ends with it,
  so the job ends naming the ranks instead of repeating the verdict for
  ever (a loop that commits before its out-of-step call commits at every
  try, so the rule for resets without a commit never ends it)."""
import re
import sys

from conftest import run
from elastic_replay import STEPS
from test_elastic import ENV, WORKER, check_run


def test_a_job_that_starts_at_one_worker_trains_after_it_grows(hvdrun, tmp_path):
    # -np 1: rank 0's optimizer is built at size 1. The job then fills the
    # second slot; the last step waits (ELASTIC_FULL_SIZE) until rank 1 has
    # joined, so at least that step runs at size 2.
    r = run([hvdrun, "-np", "1", "--min-np", "1", "--max-np", "2", "-H", "localhost:2",
             "--heartbeat-timeout-seconds", "2", sys.executable, WORKER,
             str(tmp_path / "no-victim"), "-1", "0", str(STEPS), "kill", "0.1"],
            timeout=120, env={**ENV, "ELASTIC_FULL_SIZE": "2"})
    output = r.stdout + r.stderr
    assert "no progress" not in output, output
    assert "hvdrun: started rank 1 on host localhost (the job grows to 2 workers)" in r.stderr, \
        r.stderr
    sizes = check_run(r, ranks=2)  # exit 0, both ranks equal, equal to the replay
    assert sizes[0] == 1 and sizes[STEPS - 1] == 2, sizes
    # Training went on at size 2: no wedge of 10 s and more before the end.
    assert r.duration < 60, r.duration


# Every try commits first, then calls a collective whose name depends on the
# rank at step 3: the ranks wait for different tensors.
OUT_OF_STEP = """
import torch
import hvd.torch as hvd

hvd.init()
state = hvd.elastic.TorchState(batch=0)


@hvd.elastic.run
def train(state):
    while state.batch < 5:
        state.commit()
        print("try", state.batch, flush=True)
        name = f"only_on_rank_{hvd.rank()}" if state.batch == 3 else f"step.{state.batch}"
        hvd.allreduce(torch.ones(2), name=name)
        state.batch += 1


train(state)
print("unreachable", flush=True)
"""


def test_a_no_progress_verdict_resets_once_then_ends_the_job(hvdrun, tmp_path):
    script = tmp_path / "out_of_step.py"
    script.write_text(OUT_OF_STEP)
    r = run([hvdrun, "-np", "2", "--min-np", "2", "--max-np", "2", "--reset-limit", "1",
             "--stall-check-no-progress-seconds", "2", sys.executable, str(script)],
            timeout=120, env=ENV)
    output = r.stdout + r.stderr
    assert r.returncode == 1, output
    assert "unreachable" not in output, output
    # The verdict names the tensors and the ranks, on every rank.
    verdict = "HorovodInternalError: no progress for 2 s on the global process set"
    assert verdict in output, output
    assert "'only_on_rank_0' submitted by rank 0, not by rank 1" in output, output
    assert "'only_on_rank_1' submitted by rank 1, not by rank 0" in output, output
    # The first verdict reset the job in place: step 3 was tried again.
    for rank in (0, 1):
        tries = re.findall(rf"^\[{rank}\]<stdout>:try 3$", r.stdout, re.M)
        assert len(tries) >= 2, r.stdout
    # The job ended at hvdrun's reset limit (one replacement), naming the rank.
    assert re.search(r"hvdrun: error: rank [01] on host localhost exited with code 1; the reset "
                     r"limit \(1, --reset-limit\) is used up", r.stderr), r.stderr
    # Two verdicts per worker process (the first resets, the second ends it),
    # each logged by the engine, plus the traceback of the second: three
    # lines a process, three processes at most (two, then a replacement).
    verdicts = len(re.findall(r"<stderr>:.*no progress for 2 s", output))
    assert 2 * 3 <= verdicts <= 3 * 3, output
    assert r.duration < 90, r.duration
