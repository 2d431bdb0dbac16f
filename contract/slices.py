"""The slice labels: the one declaration every side reads.

A slice label breaks claim-quality metrics down (release, model, route, environment). It is declared here once;
from this table come:

- the collector's default span/resource attribute for each label (``CLAIMWATCH_SLICE_ATTRIBUTES``);
- the worker's default ``CLAIMWATCH_SLICE_LABELS`` (the labels on its quality metrics);
- the recording and alerting rules (``python -m dashboards.generate``): every ``by (...)`` over slices, and the
  release comparison's *scope* (a release is compared with the other releases of the same scope value: the same
  environment, never staging against prod);
- the Grafana dashboard variables, the Argo Rollouts analysis arguments (one per scope label), the Kubernetes
  config map's ``CLAIMWATCH_SLICE_LABELS``, the metrics reference, and the ``claims`` / ``label`` filters.

Adding a label (e.g. ``tenant``): one :class:`SliceLabel` below, then ``python -m dashboards.generate`` (rules,
dashboards, Argo template, config map) and ``python -m claimwatch.docgen.metrics --write``. Labels are bounded by
the worker's slice guard (``CLAIMWATCH_MAX_VALUES_PER_LABEL``): never a trace id or free text.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SliceLabel:
    """One slice label: its name on the metrics, where the collector reads it by default, its role in comparisons."""

    name: str
    #: the span or resource attribute the collector reads the value from (``CLAIMWATCH_SLICE_ATTRIBUTES`` overrides)
    attribute: str
    #: releases are compared only within one value of a scope label (``environment``: prod with prod)
    release_scope: bool = False
    #: the value (a regex) a release analysis compares in when none is given (scope labels only)
    scope_default: str = ".*"


#: the declaration (order = the order of labels in rule names and dashboards)
SLICES: tuple[SliceLabel, ...] = (
    SliceLabel("release", "service.version"),
    SliceLabel("model", "llm.model_name"),
    SliceLabel("route", "claimwatch.route"),
    SliceLabel("environment", "deployment.environment", release_scope=True, scope_default="prod"),
)

#: the slice labels metrics are broken down by unless configured otherwise (bounded: never trace ids or text)
DEFAULT_SLICE_LABELS: tuple[str, ...] = tuple(s.name for s in SLICES)
#: the labels a release is compared within (the release comparison rules, the Argo analysis)
RELEASE_SCOPE_LABELS: tuple[str, ...] = tuple(s.name for s in SLICES if s.release_scope)
#: the collector's default slice attributes: slice label -> span/resource attribute
DEFAULT_SLICE_ATTRIBUTES: dict[str, str] = {s.name: s.attribute for s in SLICES}

if "release" not in DEFAULT_SLICE_LABELS:  # the gate, the rules and the Argo analysis compare releases
    raise RuntimeError("contract.slices: the release label is required")
