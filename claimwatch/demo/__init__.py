"""The embedded demo: a small instrumented RAG app, injected faults, and the runner behind ``claimwatch demo``."""

from claimwatch.demo.runner import run_demo

__all__ = ["run_demo"]
