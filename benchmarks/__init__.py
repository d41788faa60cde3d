"""taskq's benchmark harness: ``python -m benchmarks.run`` (``make bench``).

Each peer runs in a venv of its own (``benchmarks/.venvs/<peer>``) as a subprocess that
prints one JSON line; taskq runs from the project's interpreter. See docs/benchmarks.md.
"""
