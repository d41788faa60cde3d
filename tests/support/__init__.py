"""What the tests share: actors the real worker processes import, harnesses that start and
watch them, helpers that wait on conditions, a partition proxy, a schema dump."""
