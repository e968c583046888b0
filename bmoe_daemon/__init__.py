"""bmoe-daemon: a local-first background service that runs coding agents."""

__version__ = "0.1.0"
