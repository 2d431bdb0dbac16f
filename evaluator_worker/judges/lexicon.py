"""Word lists the heuristic judge reads: data only (hand-written, no downloads, no logic).

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
- The regexes at the end: scope words for negation (contrast, prohibition, permission, condition,
  requirement) and winner/loser roles.
"""

from __future__ import annotations

import re

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

# --------------------------------------------------------------------------- overclaiming

#: universal/exactness markers: a claim with one its evidence lacks says more than the context
INTENSIFIER = re.compile(
    r"\b(?:exactly|precisely|always|invariably|guaranteed|guarantees?|definitely|"
    r"regardless|whatever|without\s+exception|no\s+exceptions?|in\s+all\s+cases|under\s+all)\b",
    re.I,
)

# --------------------------------------------------------------------------- negation scope

#: words that put the noun phrase after them out of the statement ("in A rather than B", "A but not B")
CONTRAST_NEG = re.compile(r"\b(?:rather\s+than|instead\s+of|but\s+not|and\s+not|as\s+opposed\s+to)\s+", re.I)

#: an instruction not to do something, at the start of a clause ("do not lift ...", "avoid ...")
PROHIBITION = re.compile(
    r"^\s*(?:but\s+|and\s+|so\s+)?(?:you\s+)?(?:do\s+not|don['’]t|never|must\s+not|mustn['’]t|should\s+not|"
    r"shouldn['’]t|cannot|can['’]t|may\s+not|avoid)\b",
    re.I,
)

#: a claim that something is allowed ("you can ...", "may be stored", "is safe to")
PERMISSION = re.compile(r"\b(?:can|may|could|allowed\s+to|permitted\s+to|(?:safe|fine|okay|ok)\s+to)\b", re.I)

#: where a condition starts ("... once the surgeon clears you", "... until the wound heals")
CONDITION = re.compile(r"\b(?:if|once|as\s+soon\s+as|after|when|whenever|provided|unless|until)\b", re.I)

#: "need X" / "require X" / "with X": X is necessary or present
REQUIRE = re.compile(r"\b(?:needs?|needed|requires?|required|must\s+(?:have|hold|show|book|make)|with)\b", re.I)

# --------------------------------------------------------------------------- roles

#: winner / loser roles around a name ("A beat B", "defeating B", "B finished second")
WIN_VERBS = (
    r"(?:won|wins|beat|beats|defeated|defeats|finished\s+first|came\s+first|placed\s+first|took\s+(?:the\s+)?gold)"
)
LOSE_AFTER = r"(?:defeating|defeated|beating|beat|beats|defeats|edged|edging|over)"
LOSE_RANK = r"(?:second|third|fourth|fifth|last|runner-up|runners-up)"
