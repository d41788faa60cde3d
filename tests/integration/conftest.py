"""Fixtures shared by the integration tests (beyond the root conftest's stores)."""

from tests.worker_harness import runs_file  # noqa: F401 (the worker tests' run record)
