"""The answers' model server (searchcrawl/dev/servers/llama_server.py) as xllamacpp is told to run
it, without a server: tests/e2e/test_answers.py and test_dev_examples.py start it. This also holds
the option names of xllamacpp's llama.cpp build, which change from build to build (pyproject.toml's
range of the model extra)."""

from __future__ import annotations

import json
import subprocess
import sys

from searchcrawl.dev.servers.llama_server import CONTEXT, MODEL

# In an interpreter of its own, as the server runs: xllamacpp's Cython types clash with those of
# another Cython 3.3 module imported first (PyPI's gssapi 1.12, which spnego imports), and pytest's
# worker may have imported it.
READ_PARAMS = """
import json
from pathlib import Path
from searchcrawl.dev.servers.llama_server import server_params
params = server_params(Path("/models/smollm2.gguf"), 18080, threads=2)
print(json.dumps({
    "path": params.model.path, "alias": sorted(params.model_alias), "hostnames": params.hostnames,
    "port": params.port, "n_ctx": params.n_ctx, "threads": params.cpuparams.n_threads,
    "batch_threads": params.cpuparams_batch.n_threads, "ui": params.ui, "offline": params.offline,
}))
"""


def test_smollm2_is_served_on_loopback_under_its_alias_offline_and_without_a_web_ui() -> None:
    done = subprocess.run([sys.executable, "-c", READ_PARAMS], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    params = json.loads(done.stdout)
    assert params["path"] == "/models/smollm2.gguf" and params["alias"] == [MODEL]
    assert params["hostnames"] == ["127.0.0.1"] and params["port"] == 18080
    assert params["n_ctx"] == CONTEXT == 4096 and params["threads"] == params["batch_threads"] == 2
    assert params["ui"] is False and params["offline"] is True  # no page to serve, no model hub asked
