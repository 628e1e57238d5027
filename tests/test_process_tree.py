"""The tests' ``children`` (tests/conftest.py), which the kill tests use to find a crawl's other
processes, while the crawl's threads come and go: a thread that ended between the listing of
/proc/<pid>/task and the read of its children failed a CI dry run (FileNotFoundError); under
four threads starting and ending, the old helper failed 7,192 of 20,000 reads (36 %)."""

from __future__ import annotations

import os
import subprocess
import threading

from tests.conftest import children


def test_a_process_s_children_are_found_while_its_threads_come_and_go() -> None:
    child = subprocess.Popen(["sleep", "60"])
    stop = threading.Event()

    def churn() -> None:
        while not stop.is_set():
            thread = threading.Thread(target=lambda: None)
            thread.start()
            thread.join()

    threads = [threading.Thread(target=churn) for _ in range(4)]
    for thread in threads:
        thread.start()
    try:
        for _ in range(100):
            assert child.pid in children(os.getpid())
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        child.kill()
        child.wait()
