"""Run the gateway on uvicorn: one log line when ready, a clean stop on SIGINT/SIGTERM."""

from __future__ import annotations

import logging
import sys

import uvicorn

from catp.serve.app import ServeSettings, create_app

log = logging.getLogger("catp.serve")
GRACEFUL_S = 10  # in-flight requests get this long to finish on SIGINT/SIGTERM, then they are cancelled


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, settings: ServeSettings) -> None:
        super().__init__(config)
        self._settings = settings

    def handle_exit(self, sig, frame) -> None:
        """Stop gracefully, and exit 0 after: uvicorn would raise the signal again once stopped."""
        super().handle_exit(sig, frame)
        self._captured_signals.clear()

    async def startup(self, sockets=None) -> None:
        await super().startup(sockets)
        if self.started:
            s = self._settings
            log.warning("catp serve: ready on http://%s:%d/v1 -> %s (workers %d, concurrency %d%s)",
                        self.config.host, self.config.port, s.upstream, s.workers, s.concurrency,
                        ", API key required" if s.api_key else "")


def serve(settings: ServeSettings, *, host: str = "127.0.0.1", port: int = 8100, log_level: str = "warning") -> None:
    """Blocks until SIGINT/SIGTERM. Logs go to stderr, without document text."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    log.handlers[:] = [handler]
    log.setLevel(logging.WARNING)
    log.propagate = False
    config = uvicorn.Config(create_app(settings), host=host, port=port, log_level=log_level, access_log=False,
                            timeout_graceful_shutdown=GRACEFUL_S, lifespan="on", server_header=False)
    server = _Server(config, settings)
    server.run()
    if server.started:
        log.warning("catp serve: stopped")
    else:
        from catp.errors import CatpError

        raise CatpError(f"catp serve could not start on {host}:{port} (see the log above)")
