"""The worker process: fetch, supervise consumers, run, ack, heartbeat, sweep."""
