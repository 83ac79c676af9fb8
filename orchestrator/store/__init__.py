"""The results database: typed models, engine set-up and migrations."""

from orchestrator.store.engine import DEFAULT_URL, Store, resolve_url

__all__ = ["DEFAULT_URL", "Store", "resolve_url"]
