"""A real Prometheus (Debian's prometheus; deploy/install-deps.sh --tests)
scrapes hvdrun --metrics-port of a running 2-rank job: PromQL over its HTTP
API returns the job's size and an op count that grows (docs/metrics.md)."""
import json
import subprocess
import urllib.parse

from metrics_job import free_port, get, require_tool, start_job, state, wait_until


def query(port, promql):
    """The values of an instant query, as floats (empty while there are none)."""
    status, body = get(port, "/api/v1/query?query=" + urllib.parse.quote(promql))
    assert status == 200, body
    reply = json.loads(body)
    assert reply["status"] == "success", reply
    return [float(r["value"][1]) for r in reply["data"]["result"]]


def test_prometheus_scrapes_the_job_size_and_a_growing_op_count(hvdrun, tmp_path):
    prometheus = require_tool("prometheus")
    metrics_port, prom_port = free_port(), free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: hvd
    static_configs:
      - targets: ["127.0.0.1:{metrics_port}"]
""")
    end = tmp_path / "end"
    job = start_job(hvdrun, metrics_port, end)
    prom = subprocess.Popen(
        [prometheus, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}",
         f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        wait_until(lambda: len(state(metrics_port)["ranks"]) == 2, 30, "the job's page is up",
                   job)
        assert wait_until(lambda: query(prom_port, "hvd_job_size_ranks"), 30,
                          "prometheus scraped hvd_job_size_ranks") == [2.0]
        assert wait_until(lambda: query(prom_port, 'up{job="hvd"}'), 10, "up") == [1.0]
        ops = 'sum(hvd_rank_ops_total{op="allreduce"})'
        first = wait_until(lambda: [v for v in query(prom_port, ops) if v > 0], 30,
                           "prometheus saw allreduce ops")[0]
        wait_until(lambda: [v for v in query(prom_port, ops) if v > first], 15,
                   f"the op count grew past {first}")
        rate = f'sum(rate(hvd_rank_ops_total{{op="allreduce"}}[5s]))'
        assert wait_until(lambda: [v for v in query(prom_port, rate) if v > 0], 15, "a rate")
        end.touch()
        assert job.wait(60) == 0, "\n".join(job.stderr)
    finally:
        prom.terminate()
        try:
            prom.wait(timeout=10)
        except subprocess.TimeoutExpired:
            prom.kill()
            prom.wait(timeout=10)
        job.close()
