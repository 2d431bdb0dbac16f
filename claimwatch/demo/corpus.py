"""The demo's in-memory document store and its deterministic answer generator.

Each document is a few factual sentences; each question names the facts a good
answer uses. The generator answers extractively with light paraphrase, the way
a decent RAG model does, so a baseline release is faithful by construction.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Document:
    id: str
    route: str
    title: str
    sentences: tuple[str, ...]

    @property
    def text(self) -> str:
        return " ".join(self.sentences)


@dataclass(frozen=True)
class Question:
    text: str
    doc_id: str
    #: indices of the document sentences the answer uses
    facts: tuple[int, ...]


DOCUMENTS: tuple[Document, ...] = (
    Document(
        "recipe-cookies",
        "recipes",
        "Chocolate chip cookies",
        (
            "Preheat the oven to 350 F before mixing the dough.",
            "Bake the cookies at 350 F for 8 to 10 minutes, until the edges are golden.",
            "Let the cookies cool on the baking sheet for 5 minutes.",
            "The dough can be refrigerated for up to 3 days.",
        ),
    ),
    Document(
        "recipe-bread",
        "recipes",
        "Sourdough loaf",
        (
            "The sourdough needs a bulk fermentation of 4 to 5 hours at room temperature.",
            "Bake the loaf at 450 F for 20 minutes with the lid on.",
            "Remove the lid and bake for another 25 minutes.",
            'Chef Nadia Okafor said, "patience is the secret ingredient of good bread."',
        ),
    ),
    Document(
        "med-statin",
        "medicine",
        "Atorvastatin leaflet",
        (
            "Atorvastatin reduces LDL cholesterol in adults with high cholesterol.",
            "The usual starting dose is 10 mg once a day.",
            "Patients should report unexplained muscle pain to their doctor.",
            "Atorvastatin is not recommended during pregnancy.",
        ),
    ),
    Document(
        "med-vitd",
        "medicine",
        "Vitamin D guidance",
        (
            "Adults are advised to take 10 micrograms of vitamin D a day during autumn and winter.",
            "Vitamin D helps the body absorb calcium.",
            "Taking more than 100 micrograms a day may be harmful.",
            'Dr. Helen Park said, "most people get enough vitamin D from sunlight in summer."',
        ),
    ),
    Document(
        "fin-rates",
        "finance",
        "Central bank statement",
        (
            "The central bank held its policy rate at 4.5 percent in March 2024.",
            'Chair Maria Lopez said, "we will not cut rates until inflation is under control."',
            "Inflation fell to 3.1 percent in February.",
            "The next rate decision is scheduled for May 2024.",
        ),
    ),
    Document(
        "fin-fund",
        "finance",
        "Index fund factsheet",
        (
            "The fund tracks the FTSE All-World index.",
            "Its ongoing charge is 0.22 percent a year.",
            "The fund was launched in June 2012.",
            "Dividends are reinvested automatically.",
        ),
    ),
    Document(
        "prod-router",
        "product",
        "Router X200 manual",
        (
            "The X200 router supports Wi-Fi 6 on the 2.4 GHz and 5 GHz bands.",
            "Hold the reset button for 10 seconds to restore factory settings.",
            "The default admin password is printed on the label under the router.",
            "Firmware updates may be installed automatically at 3 AM.",
        ),
    ),
    Document(
        "prod-battery",
        "product",
        "Headphones H5 support page",
        (
            "The H5 headphones last up to 30 hours on a full charge.",
            "A full charge takes two hours forty minutes with the supplied cable.",
            "Ten minutes of charging gives about 3 hours of playback.",
            "The headphones are not waterproof.",
        ),
    ),
    Document(
        "hist-bridge",
        "history",
        "The Harbour Bridge",
        (
            "Construction of the Harbour Bridge began in 1924.",
            "The bridge opened to traffic in March 1932.",
            "Engineer John Bradfield oversaw the design and construction.",
            "About 1,400 workers were employed on the project.",
        ),
    ),
    Document(
        "hist-canal",
        "history",
        "The Grand Canal",
        (
            "The canal was completed in 1825 after eight years of work.",
            "It connected the lake to the river over 363 miles.",
            "Governor DeWitt Clinton championed the project.",
            "Tolls on the canal were abolished in 1882.",
        ),
    ),
)

DOCS_BY_ID = {d.id: d for d in DOCUMENTS}

QUESTIONS: tuple[Question, ...] = (
    Question("How long should I bake chocolate chip cookies?", "recipe-cookies", (1, 2)),
    Question("How do I prepare the oven and dough for the cookies?", "recipe-cookies", (0, 3)),
    Question("How long does sourdough bake?", "recipe-bread", (1, 2)),
    Question("What does the chef say about bread?", "recipe-bread", (3, 0)),
    Question("What does atorvastatin do and what is the dose?", "med-statin", (0, 1)),
    Question("What are the warnings for atorvastatin?", "med-statin", (2, 3)),
    Question("How much vitamin D should adults take?", "med-vitd", (0, 2)),
    Question("What did Dr. Park say about vitamin D?", "med-vitd", (3, 1)),
    Question("What did the central bank decide in March?", "fin-rates", (0, 1)),
    Question("What happened to inflation and when is the next decision?", "fin-rates", (2, 3)),
    Question("What does the index fund cost?", "fin-fund", (1, 0)),
    Question("When was the fund launched?", "fin-fund", (2, 3)),
    Question("How do I reset the X200 router?", "prod-router", (1, 2)),
    Question("Which Wi-Fi bands does the X200 support?", "prod-router", (0, 3)),
    Question("How long does the H5 battery last?", "prod-battery", (0, 1)),
    Question("How fast do the H5 headphones charge?", "prod-battery", (2, 3)),
    Question("When was the Harbour Bridge built?", "hist-bridge", (0, 1)),
    Question("Who built the Harbour Bridge?", "hist-bridge", (2, 3)),
    Question("When was the Grand Canal finished?", "hist-canal", (0, 1)),
    Question("Who championed the Grand Canal?", "hist-canal", (2, 3)),
)

ABSTAIN_QUESTION = Question("What is the airspeed of an unladen swallow?", "hist-canal", ())


def retrieve(question: Question, k: int = 3) -> list[Document]:
    """The gold document first, then deterministic neighbours (same route first)."""
    gold = DOCS_BY_ID[question.doc_id]
    others = sorted((d for d in DOCUMENTS if d.id != gold.id), key=lambda d: (d.route != gold.route, d.id))
    return [gold, *others[: k - 1]]


#: how a decent generator rewords the documents: same facts, other words (still faithful)
PARAPHRASES: dict[str, str] = {
    "Bake the cookies at 350 F for 8 to 10 minutes, until the edges are golden.": "The cookies need 8 to 10 minutes in a 350 F oven, until their edges turn golden.",
    "Let the cookies cool on the baking sheet for 5 minutes.": "After baking, leave the cookies on the sheet for 5 minutes to cool.",
    "The dough can be refrigerated for up to 3 days.": "You can keep the dough in the fridge for as long as 3 days.",
    "Bake the loaf at 450 F for 20 minutes with the lid on.": "The loaf bakes with its lid on for 20 minutes at 450 F.",
    "The usual starting dose is 10 mg once a day.": "Treatment normally starts at 10 mg taken once daily.",
    "Patients should report unexplained muscle pain to their doctor.": "Unexplained muscle pain should be reported to a doctor.",
    "Vitamin D helps the body absorb calcium.": "Calcium absorption in the body is helped by vitamin D.",
    "Inflation fell to 3.1 percent in February.": "In February, inflation dropped to 3.1 percent.",
    "Its ongoing charge is 0.22 percent a year.": "The fund charges 0.22 percent a year in ongoing costs.",
    "Hold the reset button for 10 seconds to restore factory settings.": "To restore the factory settings, press and hold the reset button for 10 seconds.",
    "The H5 headphones last up to 30 hours on a full charge.": "On a full charge the H5 headphones run for up to 30 hours.",
    "Construction of the Harbour Bridge began in 1924.": "Work on the Harbour Bridge started in 1924.",
    "Engineer John Bradfield oversaw the design and construction.": "The design and construction were overseen by engineer John Bradfield.",
    "Governor DeWitt Clinton championed the project.": "The project's champion was Governor DeWitt Clinton.",
}


def answer(question: Question, rng=None) -> list[str]:
    """Answer sentences from the gold document, reworded about half the time (faithful by construction)."""
    doc = DOCS_BY_ID[question.doc_id]
    if not question.facts:
        return ["I don't know based on the provided documents."]
    out = []
    for i in question.facts:
        sentence = doc.sentences[i]
        if rng is not None and sentence in PARAPHRASES and rng.random() < 0.5:
            sentence = PARAPHRASES[sentence]
        out.append(sentence)
    return out
