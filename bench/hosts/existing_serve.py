"""Serve a bench workflow with the EXISTING host (agent-framework-foundry-hosting's ResponsesHostServer).

Run with the python of bench/.venv-existing (never with the project's .venv): the benchmark installs
agent-framework-foundry-hosting 1.0.0b261022 on azure-ai-agentserver-responses 2.3.0 there.

    bench/.venv-existing/bin/python bench/hosts/existing_serve.py --app burst --port 8123 [--resilient]

The workflows are the benchmark's own (bench/apps.py, imported by path), each wrapped with
`.as_agent()`; the host gets a factory building a fresh agent per request (its documented way of
hosting a WorkflowAgent: one instance must not serve two requests). Its on-disk state (task records,
SSE logs, response store, checkpoints) goes under AGENTSERVER_STATE_ROOT, which the benchmark points
at a fresh directory per configuration. Logging is at WARNING and the access log is off, as for ours.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

APPS = Path(__file__).resolve().parent.parent / "apps.py"  # bench/apps.py


def load_apps() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_apps", APPS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_apps"] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--app", required=True, help="a workflow factory in bench/apps.py (burst, steps, ticks)")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument(
        "--resilient", action="store_true", help="ResponsesServerOptions(resilient_background=True)"
    )
    args = ap.parse_args()

    if not os.environ.get("AGENTSERVER_STATE_ROOT"):
        sys.exit("set AGENTSERVER_STATE_ROOT to a fresh directory")

    from agent_framework_foundry_hosting import ResponsesHostServer
    from azure.ai.agentserver.responses import ResponsesServerOptions

    apps = load_apps()
    factory = getattr(apps, args.app)

    def make_agent() -> Any:
        return factory().as_agent(name=args.app)

    options = ResponsesServerOptions(resilient_background=args.resilient)
    server = ResponsesHostServer(
        make_agent,
        options=options,
        log_level="WARNING",
        access_log=None,
        configure_observability=None,
    )
    logging.basicConfig(level=logging.WARNING)
    server.run(host=args.host, port=args.port)


if __name__ == "__main__":
    main()
