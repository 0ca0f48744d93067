"""The live job page (hvdrun --metrics-port, docs/metrics.md) in a real
browser: Debian's chromium, headless, driven over the DevTools protocol
(python3-websocket; both from deploy/install-deps.sh --tests), loads the page
of an elastic job, sees rank 1 go from running to gone when its worker is
killed with SIGKILL and back to running when its replacement joins, and
logs no console error. HVD_METRICS_SCREENSHOT=FILE saves a PNG of the page
(docs/images/job_page.png)."""
import base64
import itertools
import json
import os
import signal
import subprocess
import time

from metrics_job import (ELASTIC_WORKER, free_port, get, require_tool, start_job, state,
                         wait_until)


class DevTools:
    """One page target of a browser, over the DevTools protocol."""

    def __init__(self, ws_url):
        import websocket  # python3-websocket
        self.ws = websocket.create_connection(ws_url, timeout=10, suppress_origin=True)
        self.ids = itertools.count(1)
        self.errors = []  # console errors, exceptions, error log entries

    def _note(self, message):
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append(json.dumps(params.get("args"))[:300])
        elif method == "Runtime.exceptionThrown":
            self.errors.append(json.dumps(params.get("exceptionDetails"))[:300])
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            self.errors.append(params["entry"].get("text", "")[:300])

    def call(self, method, **params):
        ident = next(self.ids)
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            message = json.loads(self.ws.recv())
            if message.get("id") == ident:
                assert "error" not in message, message
                return message.get("result", {})
            self._note(message)
        raise AssertionError(f"no answer to {method} within 20 s")

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    def close(self):
        self.ws.close()


def worker_pid(tag, slot):
    """The pid of the worker of `slot` started with METRICS_TEST=tag in its environment."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if f"METRICS_TEST={tag}".encode() in env and f"HVD_RANK={slot}".encode() in env:
            return int(entry)
    return None


RANK_STATES = ("JSON.stringify(Array.from(document.querySelectorAll('[data-rank]'))"
               ".map(e => [e.dataset.rank, e.dataset.state]))")


def test_the_page_shows_a_killed_rank_gone_and_back(hvdrun, tmp_path):
    try:
        import websocket  # noqa: F401
    except ImportError:
        require_tool("python3-websocket", "__no_such_program__")
    chromium = require_tool("chromium", "chromium", "chromium-browser")
    metrics_port, devtools_port = free_port(), free_port()
    tag = str(tmp_path)
    end = tmp_path / "end"
    # Nobody fails by itself (victim -1): the test kills rank 1.
    job = start_job(hvdrun, metrics_port, end, extra=["--min-np", "1", "--max-np", "2"],
                    worker_args=[ELASTIC_WORKER, str(tmp_path / "marker"), "-1", "0", "600",
                                 "kill", "0.05"],
                    env={"METRICS_TEST": tag, "ELASTIC_FULL_SIZE": "0",
                         "ELASTIC_END_FILE": str(end)})
    browser = None
    devtools = None
    try:
        browser = subprocess.Popen(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-dev-shm-usage", f"--remote-debugging-port={devtools_port}",
             "--remote-allow-origins=*", f"--user-data-dir={tmp_path / 'profile'}",
             "--window-size=900,800", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        targets = wait_until(
            lambda: [t for t in json.loads(get(devtools_port, "/json/list")[1])
                     if t.get("type") == "page"], 30, "chromium's DevTools answered")
        devtools = DevTools(targets[0]["webSocketDebuggerUrl"])
        devtools.call("Runtime.enable")
        devtools.call("Log.enable")
        devtools.call("Page.enable")
        wait_until(lambda: [r["state"] for r in state(metrics_port)["ranks"]] ==
                   ["running", "running"], 60, "both ranks running", job)
        devtools.call("Page.navigate", url=f"http://127.0.0.1:{metrics_port}/")

        def ranks():
            return dict(json.loads(devtools.evaluate(RANK_STATES) or "[]"))

        wait_until(lambda: ranks() == {"0": "running", "1": "running"}, 20,
                   "the page shows both ranks running")
        pid = wait_until(lambda: worker_pid(tag, 1), 10, "the worker of rank 1 found")
        os.kill(pid, signal.SIGKILL)
        seen = []  # what the page showed, for the failure message

        def shows(want):
            now = ranks()
            if not seen or seen[-1][1] != now:
                seen.append((round(time.monotonic() - killed, 1), now))
            return now.get("1") == want

        killed = time.monotonic()
        wait_until(lambda: shows("gone"), 20, "the page shows rank 1 gone", seen=seen)
        wait_until(lambda: ranks() == {"0": "running", "1": "running"}, 60,
                   "the page shows rank 1 running again")
        events = devtools.evaluate("document.getElementById('events').textContent")
        assert "rank 1 on localhost killed by signal 9" in events, events
        time.sleep(2)  # a few more polls and chart updates
        if os.environ.get("HVD_METRICS_SCREENSHOT"):
            shot = devtools.call("Page.captureScreenshot", format="png")
            with open(os.environ["HVD_METRICS_SCREENSHOT"], "wb") as f:
                f.write(base64.b64decode(shot["data"]))
        devtools.evaluate("1")  # collects the events that came meanwhile
        assert devtools.errors == [], devtools.errors
        end.write_text("1")  # elastic_train.py ends after the step the file names
        assert job.wait(90) == 0, "\n".join(job.stderr[-30:])
    finally:
        if devtools:
            devtools.close()
        if browser:
            browser.terminate()
            try:
                browser.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(browser.pid, signal.SIGKILL)
                browser.wait(timeout=10)
        job.close()

