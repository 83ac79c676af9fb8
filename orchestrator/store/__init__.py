"""The results database: typed models, engine set-up and migrations."""

from wirewise.orchestrator.store.engine import DEFAULT_URL, HEAD, Store, resolve_url

__all__ = ["DEFAULT_URL", "HEAD", "Store", "resolve_url"]
