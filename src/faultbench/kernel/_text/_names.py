"""English plurals for record accessors: `world.order` and `world.orders` are the same table.

Record names are snake_case identifiers, so only the last word is inflected
(`line_item` -> `line_items`). A name that already reads as a plural (`orders`, faultbench 0.1
style) is its own plural, which gives that record a single accessor.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

_IRREGULAR = {
    "person": "people",
    "child": "children",
    "man": "men",
    "woman": "women",
    "mouse": "mice",
    "goose": "geese",
    "tooth": "teeth",
    "foot": "feet",
    "ox": "oxen",
    "leaf": "leaves",
    "life": "lives",
    "knife": "knives",
    "wife": "wives",
    "half": "halves",
    "shelf": "shelves",
    "wolf": "wolves",
    "calf": "calves",
    "thief": "thieves",
    "loaf": "loaves",
    "scarf": "scarves",
    "matrix": "matrices",
    "vertex": "vertices",
    "hero": "heroes",
    "potato": "potatoes",
    "tomato": "tomatoes",
    "echo": "echoes",
    "datum": "data",
    "criterion": "criteria",
    "phenomenon": "phenomena",
    "medium": "media",
    "quiz": "quizzes",
    "gas": "gases",
    "alias": "aliases",
    "atlas": "atlases",
    "canvas": "canvases",
    "bias": "biases",
    "lens": "lenses",
}
_IRREGULAR_PLURALS = frozenset(_IRREGULAR.values())
_UNCOUNTABLE = frozenset(
    {
        "data", "metadata", "info", "information", "news", "series", "species", "equipment",
        "feedback", "software", "hardware", "money", "sheep", "fish", "deer", "staff", "inventory",
    }
)  # fmt: skip
_VOWELS = frozenset("aeiou")


def _plural_word(word: str) -> str:
    lower = word.lower()
    if lower in _UNCOUNTABLE or lower in _IRREGULAR_PLURALS:
        return word
    if lower in _IRREGULAR:
        plural = _IRREGULAR[lower]
        return plural.capitalize() if word[:1].isupper() else plural
    if _reads_plural(lower):
        return word
    if lower.endswith("y") and len(lower) > 1 and lower[-2] not in _VOWELS:
        return word[:-1] + "ies"
    if lower.endswith("is"):  # analysis -> analyses
        return word[:-2] + "es"
    if lower.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    return word + "s"


def _reads_plural(lower: str) -> bool:
    # "status", "address", "analysis" end in s but are singular; "orders", "categories" are not.
    return lower.endswith("s") and not lower.endswith(("ss", "us", "is")) and len(lower) > 2


def plural(word: str) -> str:
    """The English plural of a snake_case name: refund -> refunds, category -> categories,
    address -> addresses, status -> statuses, box -> boxes, person -> people, orders -> orders."""
    head, sep, last = word.rpartition("_")
    if not last:
        return word
    return head + sep + _plural_word(last)


def closest(word: object, candidates: Iterable[str]) -> str | None:
    """The candidate closest to `word`: difflib's best match (ratio >= 0.6), else one that
    differs only in case, else None. A non-string, or a word over 100 characters (difflib's
    cost grows with it, and an agent can send a megabyte), is close to nothing."""
    if not isinstance(word, str) or len(word) > 100:
        return None
    candidates = list(candidates)
    match = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    if match:
        return match[0]
    lower = {c.lower(): c for c in candidates}
    return lower.get(word.lower())


def did_you_mean(word: object, candidates: Iterable[str], *, sentence: bool = False) -> str:
    """The closest candidate as a hint, or `""` when none is close. World file problems end
    a clause (`"; did you mean 'x'?"`); runtime errors, with `sentence=True`, end a sentence
    (`" Did you mean 'x'?"`)."""
    match = closest(word, candidates)
    if match is None:
        return ""
    return f" Did you mean {match!r}?" if sentence else f"; did you mean {match!r}?"


def one_of(candidates: Iterable[str]) -> str:
    """`"a, b or c"` for messages."""
    items = list(candidates)
    if len(items) <= 1:
        return "".join(items) or "(none)"
    return ", ".join(items[:-1]) + " or " + items[-1]
