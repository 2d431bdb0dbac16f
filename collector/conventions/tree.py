"""One trace's span facts as a tree: parents, children, depth, subtrees (iterative: deep traces are fine).

A parent id that is not in the trace (a remote parent, a span lost to a limit) makes its child a local root;
a parent cycle (hostile input) ends every walk instead of looping.
"""

from __future__ import annotations

from typing import Iterable

from collector.conventions.facts import SpanFacts


class TraceTree:
    """Navigation over one trace's :class:`SpanFacts`."""

    def __init__(self, facts: Iterable[SpanFacts]) -> None:
        self.facts = list(facts)
        self.by_id = {f.span_id: f for f in self.facts}
        self.children: dict[int, list[SpanFacts]] = {}
        for f in self.facts:
            if f.parent_id is not None and f.parent_id in self.by_id and f.parent_id != f.span_id:
                self.children.setdefault(f.parent_id, []).append(f)
        self._depth: dict[int, int] = {}
        self._above: dict[int, frozenset[str]] | None = None

    def roots(self) -> list[SpanFacts]:
        """Spans without a parent in the trace."""
        return [f for f in self.facts if f.parent_id is None or f.parent_id not in self.by_id]

    def parent(self, f: SpanFacts) -> SpanFacts | None:
        if f.parent_id is None or f.parent_id == f.span_id:
            return None
        return self.by_id.get(f.parent_id)

    def ancestors(self, f: SpanFacts) -> list[SpanFacts]:
        """The spans above ``f``, nearest first."""
        out: list[SpanFacts] = []
        seen = {f.span_id}
        cur = self.parent(f)
        while cur is not None and cur.span_id not in seen:
            seen.add(cur.span_id)
            out.append(cur)
            cur = self.parent(cur)
        return out

    def depth(self, f: SpanFacts) -> int:
        cached = self._depth.get(f.span_id)
        if cached is None:
            cached = self._depth[f.span_id] = len(self.ancestors(f))
        return cached

    def subtree(self, head: SpanFacts) -> list[SpanFacts]:
        """``head`` and every span below it."""
        out, stack, seen = [], [head], set()
        while stack:
            f = stack.pop()
            if f.span_id in seen:
                continue
            seen.add(f.span_id)
            out.append(f)
            stack.extend(self.children.get(f.span_id, ()))
        return out

    def bottom_up(self) -> list[SpanFacts]:
        """Every span reachable from a root, children before their parents."""
        order: list[SpanFacts] = []
        seen: set[int] = set()
        stack = self.roots()
        while stack:
            f = stack.pop()
            if f.span_id in seen:
                continue
            seen.add(f.span_id)
            order.append(f)
            stack.extend(self.children.get(f.span_id, ()))
        return order[::-1]

    def has_ancestor(self, f: SpanFacts, kinds: frozenset[str]) -> bool:
        """Whether a span above ``f`` has one of ``kinds`` (the kinds above every span are found in one pass)."""
        if self._above is None:
            above: dict[int, frozenset[str]] = {}
            for span in reversed(self.bottom_up()):  # parents before their children
                parent = self.parent(span)
                above[span.span_id] = (
                    above.get(parent.span_id, frozenset()) | {parent.kind} if parent is not None else frozenset()
                )
            self._above = above
        found = self._above.get(f.span_id)
        if found is None:  # on a parent cycle: not reachable from a root
            return any(a.kind in kinds for a in self.ancestors(f))
        return not found.isdisjoint(kinds)
