r"""Word lists the heuristic judge reads: data only (hand-written, no downloads, no logic).

``tests/unit/test_lexicon.py`` keeps these lists consistent: a word sits in one synonym group only,
no synonym group drags in a word of another meaning (through an irregular form or a shared stem),
antonym pairs are unique (in either order), and every antonym word is a content word the judge
actually compares (a stopword, negation or hedge word is removed before comparison, so a pair using
one could never fire).

Why each list exists (the failure type it serves):

- ``SYNONYM_GROUPS``: paraphrase. Words of a group share one comparison key (the first word's).
  Only unambiguous, common pairs: a word with two common senses ("close" = shut / near,
  "left" = departed / not right) in a group turns one sense into the other and makes false
  SUPPORTED (or false CONTRADICTED through an antonym) verdicts.
- ``ANTONYM_PAIRS``: antonym substitution ("sales rose" vs "sales fell"). Written with any member of a
  synonym group; the judge compares keys.
- ``CLOSED_CLASSES``: value swap within a closed class (a colour, weekday or direction for another).
- ``INTENSIFIER``: overclaiming, the reverse of a hedge ("exactly", "always" where the context is
  approximate or has exceptions).
- The cue lists after them (negation, hedges, intensifiers, speech verbs, scope words for negation,
  winner/loser roles, future and intent, relational words around numbers) and the number, unit and date
  words ``quantities`` reads. Entries of a ``*_CUES``-style tuple are regex fragments (``s?`` for an
  optional ending, ``\s+`` between words), joined in order by ``alternation``: order matters where one
  entry is a prefix of another ("no" before "no longer" matches "no"). The compiled patterns at the end
  are built from these lists; no other module writes a word into a regex.
"""

from __future__ import annotations

import re
from typing import Iterable

# --------------------------------------------------------------------------- function words

#: removed before comparing content (they carry structure, not the claim's content)
STOPWORDS = frozenset(
    """
    a an the and or but if then else so as of at by for with in on to from into onto upon over under about
    above below up down out off through during before after between among within without via per than
    is are was were be been being am isn't aren't wasn't weren't 's
    has have had having do does did done doing
    will would shall should can could may might must
    i me my mine we us our ours you your yours he him his she her hers it its they them their theirs
    this that these those there here what which who whom whose when where why how
    all any both each every few more most other some such only own same too very just also even
    not no nor never none n't
    s t d ll re ve m
    again further once however therefore thus hence although though while whereas because since until
    yes ok okay well really actually basically generally typically usually often sometimes always
    one's etc e.g i.e
    said says say stated states according
    new
    someone somebody something anyone anybody anything everyone everybody everything
    """.split()
)

#: hedge vocabulary: removed from content overlap (hedges are compared as cues, not as content)
HEDGE_WORDS = frozenset(
    "may might could possibly perhaps probably likely unlikely potentially reportedly allegedly presumably "
    "apparently suggest suggests suggested seem seems seemed appear appears appeared thought believed "
    "considered tend tends maybe arguably".split()
)

#: negation vocabulary: removed from content overlap (polarity is compared as cues)
NEGATION_WORDS = frozenset("not no never none nobody nothing neither nor without cannot n't".split())

#: verbs that carry little content ("is located in", "stands"): weigh half in overlap
LIGHT_WORDS = frozenset(
    "stand locate situate take make get become remain call name know include feature place sit go come put give "
    "located situated called named known including featuring".split()
)

#: irregular inflections -> base form (only forms with one common reading: "left" is not here, it is
#: as often the direction as the past of "leave"; "found" maps to "find", not to "founded")
IRREGULAR: dict[str, str] = {
    "said": "say",
    "says": "say",
    "built": "build",
    "made": "make",
    "gave": "give",
    "given": "give",
    "took": "take",
    "taken": "take",
    "found": "find",
    "went": "go",
    "gone": "go",
    "wrote": "write",
    "written": "write",
    "began": "begin",
    "begun": "begin",
    "won": "win",
    "led": "lead",
    "held": "hold",
    "ran": "run",
    "rose": "rise",
    "risen": "rise",
    "fell": "fall",
    "fallen": "fall",
    "grew": "grow",
    "grown": "grow",
    "became": "become",
    "sold": "sell",
    "paid": "pay",
    "brought": "bring",
    "bought": "buy",
    "taught": "teach",
    "thought": "think",
    "told": "tell",
    "known": "know",
    "knew": "know",
    "shown": "show",
    "chose": "choose",
    "chosen": "choose",
    "drove": "drive",
    "driven": "drive",
    "spent": "spend",
    "sent": "send",
    "met": "meet",
    "kept": "keep",
    "lost": "lose",
    "saw": "see",
    "seen": "see",
    "ate": "eat",
    "eaten": "eat",
    "children": "child",
    "men": "man",
    "women": "woman",
    "people": "person",
    "mice": "mouse",
    "feet": "foot",
    "teeth": "tooth",
    "better": "good",
    "best": "good",
    "worse": "bad",
    "worst": "bad",
    "larger": "large",
    "largest": "large",
    "bigger": "big",
    "biggest": "big",
    "smaller": "small",
    "smallest": "small",
    "died": "die",
    "dies": "die",
    "lay": "lie",
    "slept": "sleep",
    "struck": "strike",
    "spoke": "speak",
    "spoken": "speak",
    "stood": "stand",
    "understood": "understand",
    "caught": "catch",
    "fought": "fight",
    "froze": "freeze",
    "frozen": "freeze",
    "hid": "hide",
    "hidden": "hide",
    "rode": "ride",
    "shot": "shoot",
    "sang": "sing",
    "sung": "sing",
    "swam": "swim",
    "threw": "throw",
    "thrown": "throw",
    "wore": "wear",
    "worn": "wear",
    "flew": "fly",
    "flown": "fly",
    "forgot": "forget",
    "forgotten": "forget",
    "got": "get",
    "gotten": "get",
    "heard": "hear",
    "meant": "mean",
    "data": "datum",
    "criteria": "criterion",
    "analyses": "analysis",
    "was": "be",
    "were": "be",
}

# --------------------------------------------------------------------------- paraphrase

#: synonym groups; the first word is the group's key. One sense per group, one group per word.
SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    # change in amount
    ("reduce", "lower", "decrease", "cut", "lessen", "diminish", "drop", "decline", "fall", "shrink", "less", "fewer"),
    ("increase", "raise", "boost", "rise", "grow", "elevate", "higher", "greater", "climb"),
    ("double", "twice"),
    # size, speed, amount
    ("big", "large", "huge", "enormous"),
    ("small", "little", "tiny"),
    ("tall", "high"),
    ("fast", "quick", "rapid", "swift"),
    ("roughly", "approximately", "around"),
    ("enough", "sufficient", "adequate"),
    ("extra", "additional", "supplementary"),
    ("entire", "whole", "full"),
    ("mostly", "mainly", "primarily"),
    ("important", "significant", "crucial"),
    # time and frequency
    ("immediately", "instantly", "promptly"),
    ("advance", "ahead", "beforehand"),
    ("yearly", "annual", "annually"),
    ("daily", "everyday"),
    # actions
    ("begin", "start", "commence", "launch", "initiate"),
    ("end", "finish", "conclude", "terminate", "complete"),
    ("stop", "halt", "cease"),
    ("build", "construct", "erect"),
    ("founded", "establish"),
    ("create", "produce", "generate"),
    ("buy", "purchase", "acquire"),
    ("announce", "declare", "remark"),
    ("show", "demonstrate", "indicate"),
    ("reveal", "unveil", "disclose"),
    ("help", "aid", "assist"),
    ("use", "utilize", "utilise", "employ"),
    ("need", "require"),
    ("allow", "permit", "enable", "let"),
    ("ban", "prohibit", "forbid", "outlaw"),
    ("approve", "authorize", "authorise", "sanction"),
    ("permission", "authorization", "authorisation", "approval"),
    ("hire", "recruit"),
    ("die", "perish"),
    ("kill", "slay"),
    ("receive", "get", "obtain"),
    ("happen", "occur"),
    ("answer", "reply", "respond", "response"),
    ("speak", "talk"),
    ("choose", "select", "pick"),
    ("keep", "retain", "maintain"),
    ("tell", "inform"),
    ("harm", "damage", "injure", "hurt"),
    ("attempt", "try"),
    ("mix", "combine", "blend", "stir"),
    ("consume", "eat", "ingest"),
    ("heat", "warm"),
    ("shut", "close"),
    ("prepare", "ready"),
    ("switch", "turn"),
    ("refund", "repay", "reimburse"),
    ("delete", "erase", "remove"),
    ("deepen", "intensify", "enhance"),
    ("remain", "stay"),
    ("reside", "live"),
    ("resign", "quit"),
    ("arrive", "reach"),
    ("depart", "leave"),
    ("schedule", "plan"),
    ("sue", "litigate"),
    ("convict", "condemn"),
    ("expire", "lapse"),
    ("repair", "fix", "mend"),
    ("examine", "inspect", "check"),
    ("modify", "change", "alter", "adjust"),
    ("verify", "confirm"),
    ("victory", "win"),
    ("defeat", "beat"),
    ("leak", "drip"),
    # things and people
    ("drug", "medication", "medicine", "medicament"),
    ("illness", "disease", "sickness"),
    ("doctor", "physician"),
    ("car", "automobile", "vehicle"),
    ("author", "writer"),
    ("kid", "child"),
    ("home", "house", "residence"),
    ("apartment", "flat"),
    ("occupant", "resident", "tenant"),
    ("visitor", "tourist"),
    ("study", "research", "trial"),
    ("company", "firm", "business", "corporation"),
    ("city", "town"),
    ("country", "nation"),
    ("picture", "photo", "photograph", "image"),
    ("cost", "price"),
    ("payment", "fee"),
    ("free", "complimentary", "gratis"),
    ("award", "prize"),
    ("film", "movie"),
    ("method", "approach", "technique"),
    ("goal", "aim", "objective"),
    ("error", "mistake", "mistaken", "mistakenly", "erroneous", "erroneously", "wrongly"),
    ("rule", "regulation"),
    ("law", "statute"),
    ("weight", "mass"),
    ("location", "site"),
    ("journey", "trip"),
    ("contest", "competition", "race"),
    ("version", "release"),
    ("cap", "limit", "ceiling"),
    ("hazard", "danger", "risk"),
    ("frequent", "common", "widespread"),
    ("accurate", "precise", "correct"),
    ("moisture", "hydrate", "hydration"),
    ("foam", "suds", "lather"),
)

# --------------------------------------------------------------------------- antonym substitution

#: opposite pairs (any member of a synonym group stands for the group); comparative and superlative
#: forms are listed where the stemmer keeps them apart from the base word
ANTONYM_PAIRS: tuple[tuple[str, str], ...] = (
    # direction of change, rank and extremes
    ("increase", "reduce"),
    ("gain", "lose"),
    ("profit", "loss"),
    ("surplus", "deficit"),
    ("expand", "shrink"),
    ("big", "small"),
    ("high", "low"),
    ("highest", "lowest"),
    ("long", "short"),
    ("longest", "shortest"),
    ("fast", "slow"),
    ("fastest", "slowest"),
    ("maximum", "minimum"),
    ("majority", "minority"),
    ("first", "last"),
    ("earliest", "latest"),
    ("early", "late"),
    ("oldest", "newest"),
    ("young", "old"),
    ("best", "worst"),
    ("rich", "poor"),
    ("cheap", "expensive"),
    ("strong", "weak"),
    ("easy", "difficult"),
    ("hot", "cold"),
    ("warmest", "coldest"),
    ("hottest", "coldest"),
    ("wet", "dry"),
    ("wettest", "driest"),
    # outcome
    ("win", "lose"),
    ("win", "loss"),
    ("success", "failure"),
    ("success", "fail"),
    ("guilty", "innocent"),
    ("acquit", "convict"),
    ("alive", "dead"),
    ("effective", "ineffective"),
    ("positive", "negative"),
    ("true", "false"),
    # permission and obligation
    ("allow", "ban"),
    ("approve", "reject"),
    ("accept", "reject"),
    ("legal", "illegal"),
    ("safe", "dangerous"),
    ("mandatory", "optional"),
    ("required", "optional"),
    ("compulsory", "voluntary"),
    ("include", "exclude"),
    ("enable", "disable"),
    ("refundable", "nonrefundable"),
    # state, place and movement
    ("open", "shut"),
    ("begin", "end"),
    ("arrive", "depart"),
    ("entry", "exit"),
    ("import", "export"),
    ("buy", "sell"),
    ("inside", "outside"),
    ("indoor", "outdoor"),
    ("internal", "external"),
    ("public", "private"),
    ("domestic", "international"),
    ("domestic", "foreign"),
    ("upstream", "downstream"),
    ("inbound", "outbound"),
    ("left", "right"),
    ("north", "south"),
    ("east", "west"),
    ("wired", "wireless"),
    ("furnished", "unfurnished"),
    ("raw", "cooked"),
    ("frozen", "thawed"),
    ("sweet", "sour"),
    ("male", "female"),
    ("common", "rare"),
    ("morning", "evening"),
    ("day", "night"),
)

#: closed word classes: two different members in the same slot cannot both be true of one thing
CLOSED_CLASSES: tuple[frozenset[str], ...] = (
    frozenset("red orange amber yellow green blue purple violet pink white black grey gray brown silver gold".split()),
    frozenset("monday tuesday wednesday thursday friday saturday sunday".split()),
    frozenset("north south east west northeast northwest southeast southwest".split()),
    frozenset("left right".split()),
)

#: month names: calendar words, never names of people or things in an entity swap
MONTH_NAMES = frozenset("january february march april may june july august september october november december".split())

# --------------------------------------------------------------------------- numbers, units, dates (``quantities``)

NUM_WORDS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fourty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
    "dozen": 12,
}
MULTIPLIERS = {"hundred": 100, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12, "bn": 1e9, "mn": 1e6}

#: unit token -> (dimension, factor to base, display)
UNITS: dict[str, tuple[str, float, str]] = {}


def _u(dim: str, factor: float, *names: str) -> None:
    for n in names:
        UNITS[n] = (dim, factor, names[0])


_u("time", 1, "seconds", "second", "secs", "sec", "s")
_u("time", 60, "minutes", "minute", "mins", "min")
_u("time", 3600, "hours", "hour", "hrs", "hr", "h")
_u("time", 86400, "days", "day")
_u("time", 604800, "weeks", "week", "wks")
_u("time", 2629800, "months", "month")
_u("time", 31557600, "years", "year", "yrs", "yr")
_u("time", 315576000, "decades", "decade")
_u("time", 3155760000, "centuries", "century")
_u("temp_f", 1, "F", "f", "fahrenheit")
_u("temp_c", 1, "C", "c", "celsius", "centigrade")
_u("length", 0.001, "mm", "millimeters", "millimetres", "millimeter", "millimetre")
_u("length", 0.01, "cm", "centimeters", "centimetres", "centimeter", "centimetre")
_u("length", 1, "m", "meters", "metres", "meter", "metre")
_u("length", 1000, "km", "kilometers", "kilometres", "kilometer", "kilometre", "kms")
_u("length", 0.0254, "inches", "inch")
_u("length", 0.3048, "feet", "foot", "ft")
_u("length", 0.9144, "yards", "yard", "yd")
_u("length", 1609.344, "miles", "mile", "mi")
_u("mass", 0.001, "mg", "milligrams", "milligram")
_u("mass", 1, "g", "grams", "gram", "gr")
_u("mass", 1000, "kg", "kilograms", "kilogram", "kilos", "kilo")
_u("mass", 453.592, "lb", "lbs", "pounds", "pound")
_u("mass", 28.3495, "oz", "ounces", "ounce")
_u("mass", 1e6, "tons", "ton", "tonnes", "tonne")
_u("volume", 1, "ml", "milliliters", "millilitres", "milliliter", "millilitre")
_u("volume", 1000, "l", "liters", "litres", "liter", "litre")
_u("volume", 236.6, "cups", "cup")
_u("volume", 14.79, "tbsp", "tablespoons", "tablespoon")
_u("volume", 4.93, "tsp", "teaspoons", "teaspoon")
_u("volume", 3785.4, "gallons", "gallon")
_u("percent", 1, "%", "percent", "pct")
_u("money_usd", 1, "dollars", "dollar", "usd")
_u("money_usd", 0.01, "cents", "cent")
_u("money_eur", 1, "euros", "euro", "eur")
_u("speed", 1, "mph")
_u("speed_k", 1, "kph", "km/h")
_u("energy", 1, "calories", "calorie", "kcal", "cal")
_u("data", 1, "mb", "megabytes")
_u("data", 1000, "gb", "gigabytes")
_u("data", 1e6, "tb", "terabytes")
_u("degrees", 1, "degrees", "degree")
_u("power", 1, "W", "watts", "watt")
_u("power", 1000, "kw", "kilowatts", "kilowatt")
_u("charge", 1, "mah")
_u("frequency", 1e9, "ghz")
_u("frequency", 1e6, "mhz")
_u("iu", 1, "iu")

CURRENCY_PREFIX = {"$": "money_usd", "€": "money_eur", "£": "money_gbp", "¥": "money_jpy"}
APPROX_BEFORE = {
    "about",
    "around",
    "approximately",
    "roughly",
    "nearly",
    "almost",
    "some",
    "circa",
    "ca",
    "~",
    "over",
    "under",
    "approx",
    "estimated",
    "upwards",
}
APPROX_BEFORE_2 = {
    ("more", "than"),
    ("less", "than"),
    ("fewer", "than"),
    ("up", "to"),
    ("at", "least"),
    ("at", "most"),
    ("close", "to"),
    ("just", "over"),
    ("just", "under"),
    ("well", "over"),
    ("or", "so"),
    ("as", "many"),
    ("as", "much"),
}
DURATION_INTRO = {
    "for",
    "in",
    "after",
    "within",
    "about",
    "around",
    "than",
    "over",
    "takes",
    "took",
    "take",
    "lasts",
    "lasted",
    "last",
    "nearly",
    "almost",
    "roughly",
    "under",
}
MONTHS = {
    "january": 1,
    "february": 2,
    "march": 3,
    "april": 4,
    "may": 5,
    "june": 6,
    "july": 7,
    "august": 8,
    "september": 9,
    "october": 10,
    "november": 11,
    "december": 12,
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "sept": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}


#: words that are durations in years ('the centennial of' = 100 years)
ANNIVERSARY = {
    w: n * 31557600
    for w, n in (
        ("centennial", 100),
        ("centenary", 100),
        ("bicentennial", 200),
        ("bicentenary", 200),
        ("tercentenary", 300),
        ("sesquicentennial", 150),
        ("millennium", 1000),
        ("quincentenary", 500),
    )
}


FRACTIONS = {"½": 0.5, "¼": 0.25, "¾": 0.75, "⅓": 1 / 3, "⅔": 2 / 3}

ROUGH = {"about", "around", "approximately", "roughly", "nearly", "almost", "some", "circa", "ca", "~", "approx"}
LOWER_BEFORE = {"over", "above", "exceeding", "upwards", "beyond"}
UPPER_BEFORE = {"under", "below", "within", "max", "maximum"}
LOWER_BEFORE_2 = {
    ("more", "than"),
    ("at", "least"),
    ("greater", "than"),
    ("higher", "than"),
    ("longer", "than"),
    ("larger", "than"),
    ("older", "than"),
}
UPPER_BEFORE_2 = {
    ("less", "than"),
    ("fewer", "than"),
    ("up", "to"),
    ("at", "most"),
    ("lower", "than"),
    ("shorter", "than"),
    ("smaller", "than"),
    ("younger", "than"),
    ("no", "later"),
    ("as", "late"),
}
LOWER_AFTER = {
    ("or", "more"),
    ("and", "older"),
    ("or", "older"),
    ("and", "over"),
    ("or", "over"),
    ("and", "above"),
    ("or", "above"),
    ("and", "up"),
    ("or", "later"),
    ("and", "later"),
    ("or", "higher"),
    ("+",),
}
UPPER_AFTER = {
    ("or", "less"),
    ("or", "fewer"),
    ("and", "under"),
    ("or", "under"),
    ("or", "younger"),
    ("and", "younger"),
    ("or", "below"),
    ("and", "below"),
    ("or", "earlier"),
    ("or", "lower"),
}

#: words skipped between a bound word and its number ("more than about 20", "under age 18")
BOUND_SKIP = ("about", "around", "roughly", "approximately", "some", "age", "aged", "ages")
#: words that make the number after them an age ("aged 50", "ages 6 to 11")
AGE_BEFORE = ("aged", "age", "ages")
#: full month names that are a date when capitalised and alone ("in March"); "may" is as often the modal
MONTH_ALONE = (
    "march",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "january",
    "february",
    "april",
)


def alternation(entries: Iterable[str]) -> str:
    """``(?:e1|e2|...)``: the entries (regex fragments) in their order."""
    return "(?:" + "|".join(entries) + ")"


# --------------------------------------------------------------------------- negation and hedge cues (``cues``)

#: phrases that look negative but are not ("not only", "no doubt", "No. 5")
NEGATION_IGNORE: tuple[str, ...] = (
    r"not\s+only\b",
    r"no\s+doubt\b",
    r"not\s+just\b",
    r"no\.\s*\d",
    r"nothing\s+but\b",
    r"no\s+sooner\b",
)
#: negation cues (whole words; "n't" is matched on its own)
NEGATION_CUES: tuple[str, ...] = (
    "not",
    "never",
    "no",
    "none",
    "nobody",
    "nothing",
    "neither",
    "nor",
    "without",
    "cannot",
    r"no\s+longer",
    r"fail(?:s|ed)?\s+to",
    r"lack(?:s|ed)?",
)
#: hedge cues ("may", "is thought to"); the month "May" is ignored by ``cues.hedge_cues``
HEDGE_CUES: tuple[str, ...] = (
    "may",
    "might",
    "could",
    "possibly",
    "perhaps",
    "probably",
    "likely",
    "unlikely",
    "potentially",
    "reportedly",
    "allegedly",
    "presumably",
    "apparently",
    "maybe",
    "arguably",
    "suggests?",
    "suggested",
    r"seems?\s+to",
    r"seemed\s+to",
    r"appears?\s+to",
    r"appeared\s+to",
    r"(?:is|are|was|were)\s+(?:thought|believed|considered|said|reported|suspected|expected)\s+to",
    r"tends?\s+to",
    r"it\s+is\s+possible",
    r"in\s+some\s+cases",
    r"can\s+sometimes",
)

# --------------------------------------------------------------------------- overclaiming

#: universal/exactness markers: a claim with one its evidence lacks says more than the context
INTENSIFIER_CUES: tuple[str, ...] = (
    "exactly",
    "precisely",
    "always",
    "invariably",
    "guaranteed",
    "guarantees?",
    "definitely",
    "regardless",
    "whatever",
    r"without\s+exception",
    r"no\s+exceptions?",
    r"in\s+all\s+cases",
    r"under\s+all",
)

# --------------------------------------------------------------------------- speakers and quotes (``cues``)

#: titles and role words: not part of a speaker's or an entity's name
TITLES = frozenset(
    """chair chairman chairwoman chairperson president vice secretary treasury minister prime sen senator rep
    representative gov governor mayor judge justice dr mr mrs ms mx prof professor sir dame lord lady ceo cfo cto
    coo founder director general gen col captain capt chief officer commissioner ambassador spokesperson
    spokesman spokeswoman federal reserve fed state the king queen prince princess pope bishop rev saint st
    economist analyst coach manager""".split()
)
#: verbs that attribute a statement to a speaker ("X said", "said X")
SPEECH_VERBS: tuple[str, ...] = (
    "said",
    "says",
    "say",
    "cautioned",
    "acknowledged",
    "acknowledges",
    "stated",
    "states",
    "added",
    "adds",
    "told",
    "tells",
    "wrote",
    "writes",
    "explained",
    "explains",
    "announced",
    "announces",
    "declared",
    "declares",
    "noted",
    "notes",
    "claimed",
    "claims",
    "argued",
    "argues",
    "warned",
    "warns",
    "insisted",
    "insists",
    "remarked",
    "replied",
    "called",
    "calls",
    "described",
    "describes",
    "promised",
    "promises",
    "pledged",
    "acknowledged",
    "admitted",
    "cautioned",
)
#: role nouns between an organisation and its speech verb ("<Org> officials said")
SPEAKER_ROLES: tuple[str, ...] = (
    "leaders?",
    "officials?",
    "spokes(?:person|man|woman)",
    "representatives?",
    "executives?",
    "researchers?",
    "officers?",
)
#: reporting verbs: not part of the statement's content (compared as keys)
REPORTING_VERBS: tuple[str, ...] = ("say", "announce")

# --------------------------------------------------------------------------- analysis

#: a sentence-initial capitalised word with one of these endings is a common word, not a name
COMMON_SUFFIXES: tuple[str, ...] = (
    "ment",
    "tion",
    "sion",
    "ness",
    "ity",
    "ance",
    "ence",
    "ing",
    "ly",
    "ive",
    "ous",
    "ful",
    "less",
    "able",
    "ible",
    "ism",
    "ist",
    "ship",
    "ure",
)
#: contrastive conjunctions that start a new clause
CLAUSE_CONJUNCTIONS: tuple[str, ...] = ("but", "whereas", "although", "though", "unless")
#: words that make a claim number a relation between context numbers (a margin, a duration, a total)
RELATIONAL_WORDS: tuple[str, ...] = (
    "extra",
    "additional",
    "after",
    "later",
    "before",
    "earlier",
    "total",
    "altogether",
    "combined",
    r"in all",
    "margin",
    "difference",
    "lasted",
    "longer",
    "shorter",
    "apart",
    "since",
    "ago",
    "gap",
    "remaining",
    "rest",
    r"did\s+not",
    "didn't",
    "between",
    "from",
)
#: verbs of change that make "<verb> by N" a relation ("won by 3", "rose by 5%")
CHANGE_BY_VERBS: tuple[str, ...] = (
    "won",
    "wins",
    "win",
    "lead",
    "leads",
    "led",
    "ahead",
    "beat",
    "beating",
    "rose",
    "fell",
    "increased",
    "decreased",
    "grew",
    "dropped",
)
#: words skipped when collecting the words around a number
NEIGHBOUR_SKIP = frozenset(
    {
        "the",
        "a",
        "an",
        "of",
        "and",
        "or",
        "than",
        "more",
        "less",
        "about",
        "around",
        "roughly",
        "approximately",
        "some",
        "over",
        "under",
        "up",
        "to",
        "at",
        "least",
        "most",
        "nearly",
    }
)

# --------------------------------------------------------------------------- negation scope (``rules``)

#: a clause that starts with one of these is conditional (polarity checks skip it)
CONDITIONAL_OPENERS: tuple[str, ...] = ("if", "unless", "when", "whether", r"even\s+if")
#: 'without' / 'lack' negate a noun, not the predicate: left to term overlap
POLARITY_IGNORE = frozenset({"without", "lack", "lacks", "lacked"})
#: where the scope of a negation ends: punctuation, or one of these words
SCOPE_END_WORDS: tuple[str, ...] = ("unless", "except", "if", "when", "while", "because", "which", "who")
#: a noun phrase's scope also ends at a preposition ("rather than X for Y")
NP_END_WORDS: tuple[str, ...] = (
    "for",
    "in",
    "on",
    "at",
    "by",
    "from",
    "to",
    "with",
    "during",
    "after",
    "before",
    "since",
    "until",
)
#: words in a claim that put what follows out of the statement
CLAIM_NEGATORS: tuple[str, ...] = (
    "not",
    "never",
    "no",
    "without",
    "cannot",
    "n['’]t",
    "except",
    "excluding",
    r"rather\s+than",
    r"instead\s+of",
)
#: where a prohibition's condition starts ("do not lift until ...")
PROHIBITION_END_WORDS: tuple[str, ...] = ("until", "unless", "before", "if")
#: words that put the noun phrase after them out of the statement ("in A rather than B", "A but not B")
CONTRAST_NEGATORS: tuple[str, ...] = (
    r"rather\s+than",
    r"instead\s+of",
    r"but\s+not",
    r"and\s+not",
    r"as\s+opposed\s+to",
)
#: an instruction not to do something, at the start of a clause ("do not lift ...", "avoid ...")
PROHIBITION_OPENERS: tuple[str, ...] = (
    r"do\s+not",
    "don['’]t",
    "never",
    r"must\s+not",
    "mustn['’]t",
    r"should\s+not",
    "shouldn['’]t",
    "cannot",
    "can['’]t",
    r"may\s+not",
    "avoid",
)
#: a claim that something is allowed ("you can ...", "may be stored", "is safe to")
PERMISSION_CUES: tuple[str, ...] = (
    "can",
    "may",
    "could",
    r"allowed\s+to",
    r"permitted\s+to",
    r"(?:safe|fine|okay|ok)\s+to",
)
#: where a condition starts ("... once the surgeon clears you", "... until the wound heals")
CONDITION_CUES: tuple[str, ...] = (
    "if",
    "once",
    r"as\s+soon\s+as",
    "after",
    "when",
    "whenever",
    "provided",
    "unless",
    "until",
)
#: "need X" / "require X" / "with X": X is necessary or present
REQUIRE_CUES: tuple[str, ...] = (
    "needs?",
    "needed",
    "requires?",
    "required",
    r"must\s+(?:have|hold|show|book|make)",
    "with",
)

# --------------------------------------------------------------------------- hedges: modality, future, intent (``rules``)

#: modals of permission or obligation ("can" for "may" is not a hedge)
MODAL_CAN: tuple[str, ...] = (
    "can",
    "cannot",
    "can't",
    "must",
    "allowed",
    "permitted",
    "entitled",
    "able",
    "optional",
    r"have\s+to",
    r"has\s+to",
    r"need\s+to",
)
#: a claim about the future stated as fact
FUTURE_CUES: tuple[str, ...] = ("will", "won't", "shall", r"is\s+going\s+to", r"are\s+going\s+to")
#: context words that make a future event an intention, promise or forecast, not a fact
INTENT_CUES: tuple[str, ...] = (
    "plans?",
    "planned",
    "planning",
    "promised?",
    "promises",
    "pledged?",
    "pledges",
    "vowed?",
    "vows",
    "aims?",
    "aimed",
    "intends?",
    "intended",
    "hopes?",
    "hoped",
    "expects?",
    "expected",
    "forecasts?",
    "forecasted",
    "projects",
    "projected",
    "predicts?",
    "predicted",
    "proposes?",
    "proposed",
    "targets?",
    "guidance",
    "outlook",
    "anticipates?",
    "anticipated",
    "seeks?",
    "wants?",
    "would",
)
#: hedges of possibility (a claim's "can" may stand for them)
POSSIBILITY = frozenset({"may", "might", "could"})

# --------------------------------------------------------------------------- roles (``rules``)

#: winner / loser roles around a name ("A beat B", "defeating B", "B finished second")
WIN_VERB_LIST: tuple[str, ...] = (
    "won",
    "wins",
    "beat",
    "beats",
    "defeated",
    "defeats",
    r"finished\s+first",
    r"came\s+first",
    r"placed\s+first",
    r"took\s+(?:the\s+)?gold",
)
LOSE_AFTER_LIST: tuple[str, ...] = (
    "defeating",
    "defeated",
    "beating",
    "beat",
    "beats",
    "defeats",
    "edged",
    "edging",
    "over",
)
LOSE_RANK_LIST: tuple[str, ...] = ("second", "third", "fourth", "fifth", "last", "runner-up", "runners-up")

# --------------------------------------------------------------------------- patterns built from the lists above

INTENSIFIER = re.compile(r"\b" + alternation(INTENSIFIER_CUES) + r"\b", re.I)
CONTRAST_NEG = re.compile(r"\b" + alternation(CONTRAST_NEGATORS) + r"\s+", re.I)
PROHIBITION = re.compile(r"^\s*(?:but\s+|and\s+|so\s+)?(?:you\s+)?" + alternation(PROHIBITION_OPENERS) + r"\b", re.I)
PERMISSION = re.compile(r"\b" + alternation(PERMISSION_CUES) + r"\b", re.I)
CONDITION = re.compile(r"\b" + alternation(CONDITION_CUES) + r"\b", re.I)
REQUIRE = re.compile(r"\b" + alternation(REQUIRE_CUES) + r"\b", re.I)
WIN_VERBS = alternation(WIN_VERB_LIST)
LOSE_AFTER = alternation(LOSE_AFTER_LIST)
LOSE_RANK = alternation(LOSE_RANK_LIST)
