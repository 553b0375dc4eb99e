"""Deciding which request starts next: per-identity (and per-host) gates, and the
scheduler priority queue that skips requests whose gate is closed."""
