"""Stored profiles: files, context options, health, the
downloader middleware that signs them back in, and the ``profile`` command."""
