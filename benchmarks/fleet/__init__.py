"""The fleet benchmark (issue 19 item 5): ``python -m benchmarks.fleet`` (``__main__.py``).

| module | what it is |
|---|---|
| ``servers.py`` | a Postgres cluster of its own, the role with its connection limit, PgBouncer |
| ``processes.py`` | the workgroups (real ``taskq workgroup start``), their logs, /proc costs |
| ``phases.py`` | idle, wake-ups, drains (one with PgBouncer restarted), connection samples |
| ``actors.py`` | the one actor: records each run of its job |
| ``report.py`` | the verdicts and the generated section of docs/benchmarks.md |
"""
