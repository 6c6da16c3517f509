"""Test support shared by every suite. Nothing here is imported by `server/` or `bench/`.

- `inprocess.InProcessServer`: the real `server.build(settings)` under uvicorn in a thread of
  the test process (real TCP); for everything that needs no process to die.
- `servers.ServerProcess`: `durable-responses serve` in a subprocess (a fork of a warm process), for
  `kill -9`, SIGTERM and the command itself.
- `pg`: fresh PostgreSQL databases from a migrated template; fails without PostgreSQL unless
  DURABLE_RESPONSES_SKIP_POSTGRES=1. `pgserver`: a PostgreSQL server of the test's own.
- `sse`: the one SSE parser and the full-replay checks (terminal event types and statuses come
  from `server.protocol` / `server.store`, so tests and server cannot disagree).
- `responses`: reading responses, waiting for a status (no error swallowed), the error body.
- `waits.wait_until`: waiting on a condition instead of a fixed sleep.
- `db`: raw SQL on a test's database from outside the server (break it, or read it).
"""
