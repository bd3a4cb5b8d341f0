"""Seed data: plausible, type-correct rows generated from the world seed alone.

Determinism is the point: the same spec and seed give the same rows, byte for byte, in every
process. Each (seed, record, field) gets its own `random.Random`, seeded from a sha256 (never
`hash()`, which changes per process), so adding a record or a field leaves the values of the
others untouched. Ids are assigned before any value is drawn, which is why refs may point
anywhere, cycles included: a ref draws from the target's id list, whatever order the records
were declared in.

Values follow the field name where the intent is obvious (`email`, `name`, `city`, `currency`,
`*_at`, `amount`, `quantity`, ...) from small built-in word lists: no fake-data dependency.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, TypeVar

from .._text import id_order, plural
from ._types import FieldSpec, RecordSpec, SeedPlan, WorldSpec

_T = TypeVar("_T")

#: seeded datetimes fall in this window before the world's clock start
WINDOW_S = 30 * 86400
#: probability that a generated optional field is left empty
OPTIONAL_NONE_P = 0.2


def plan_ids(plan: SeedPlan) -> list[str]:
    """Ids of a plan's rows: explicit rows first (their own id, or the next free number),
    then `count` generated rows numbered "1", "2", ... skipping ids already taken."""
    if not plan.rows:
        return [str(i) for i in range(1, plan.count + 1)]
    used = {str(r["id"]) for r in plan.rows if "id" in r}
    out: list[str] = []
    n = 0

    def next_free() -> str:
        nonlocal n
        while True:
            n += 1
            if str(n) not in used:
                return str(n)

    for row in plan.rows:
        out.append(str(row["id"]) if "id" in row else next_free())
    out.extend(next_free() for _ in range(plan.count))
    return out


def generate_rows(spec: WorldSpec, seed: int) -> dict[str, list[dict[str, Any]]]:
    """Record name -> its seed rows in id order, each with every field in field order."""
    plans = {p.record: p for p in spec.seed_plans}
    ids = {rec: plan_ids(plans[rec]) if rec in plans else [] for rec in spec.records}
    out: dict[str, list[dict[str, Any]]] = {}
    for rec, rspec in spec.records.items():
        plan = plans.get(rec)
        if plan is None:
            out[rec] = []
            continue
        gens = [(f.name, f, _generator(spec, rspec, f, seed, ids)) for f in rspec.fields[1:]]
        explicit = plan.rows
        rows: list[dict[str, Any]] = []
        for i, ident in enumerate(ids[rec]):
            given = explicit[i] if i < len(explicit) else None
            row: dict[str, Any] = {"id": ident}
            drawn: set[str] = set()
            for name, field, gen in gens:
                if given is not None and name in given:
                    row[name] = given[name]
                elif field.has_default or (given is not None and field.optional):
                    # A generated row is a create that leaves the field out.
                    row[name] = field.default
                else:
                    row[name] = gen()
                    drawn.add(name)
            _cohere(row, drawn)
            rows.append(row)
        if explicit:
            rows.sort(key=lambda r: id_order(r["id"]))
        out[rec] = rows
    return out


# ---------------------------------------------------------------------------------------------
# Value generators, chosen once per field
# ---------------------------------------------------------------------------------------------


class _Rng(random.Random):
    """Mersenne Twister with one-line `choice` and `randrange` (the stdlib ones go through
    `_randbelow`, twice the cost); both are fixed functions of `random()`, so stable."""

    def choice(self, seq: Sequence[_T]) -> _T:  # type: ignore[override]  # sequences only: typeshed's SupportsLenAndGetItem is in _typeshed, a private module
        return seq[int(self.random() * len(seq))]

    def randrange(self, start: int, stop: int) -> int:  # type: ignore[override]  # two arguments only (no step, no one-argument form): the generators never need more
        return start + int(self.random() * (stop - start))


def _rng(seed: int, record: str, field: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}\x00{record}\x00{field}".encode()).digest()
    return _Rng(int.from_bytes(digest[:8], "big"))


def _generator(
    spec: WorldSpec,
    record: RecordSpec,
    field: FieldSpec,
    seed: int,
    ids: Mapping[str, list[str]],
) -> Callable[[], Any]:
    return _optional(spec, record, field, _rng(seed, record.name, field.name), ids)


def _optional(
    spec: WorldSpec,
    record: RecordSpec,
    field: FieldSpec,
    rng: random.Random,
    ids: Mapping[str, list[str]],
) -> Callable[[], Any]:
    if field.has_default:  # inside an object: a create that leaves it out
        default = field.default
        return lambda: default
    gen = _base_generator(spec, record, field, rng, ids)
    if not field.optional or gen is _none:
        return gen
    draw = rng.random
    return lambda: None if draw() < OPTIONAL_NONE_P else gen()


def _none() -> None:
    return None


def _base_generator(
    spec: WorldSpec,
    record: RecordSpec,
    field: FieldSpec,
    rng: random.Random,
    ids: Mapping[str, list[str]],
) -> Callable[[], Any]:
    kind = field.kind
    if kind == "list" or kind == "object":
        return _nested_generator(spec, record, field, rng, ids)
    if kind == "ref":
        targets = ids.get(field.ref or "", [])
        if not targets:
            if field.optional:
                return _none
            raise ValueError(
                f"{record.name}.{field.name} refers to '{field.ref}', which has no seed rows"
            )
        return lambda: rng.choice(targets)
    if kind == "enum":
        choices = field.choices
        return lambda: rng.choice(choices)
    if kind == "bool":
        return lambda: rng.random() < 0.5
    if kind == "version":  # a seeded record has been written once
        return lambda: 1
    words = set(field.name.lower().split("_"))
    if kind == "datetime":
        start = spec.clock_start
        return lambda: start - timedelta(seconds=rng.randrange(1, WINDOW_S))
    if kind == "int":
        return _int_generator(field.name.lower(), words, rng)
    if kind == "float":
        return _float_generator(field.name.lower(), words, rng)
    return _str_generator(spec, record.name.lower(), field.name.lower(), words, rng, ids)


def _nested_generator(
    spec: WorldSpec,
    record: RecordSpec,
    field: FieldSpec,
    rng: random.Random,
    ids: Mapping[str, list[str]],
) -> Callable[[], Any]:
    """A list of one to three items, or an object of its fields; each part draws from its
    own generator, seeded from this field's, so the values stay a function of the seed."""

    def sub(g: FieldSpec) -> Callable[[], Any]:
        return _optional(spec, record, g, _Rng(rng.getrandbits(64)), ids)

    if field.kind == "object":
        gens = [(g.name, sub(g)) for g in field.fields]
        return lambda: {name: gen() for name, gen in gens}
    assert field.item is not None
    item = field.item
    if item.kind == "ref" and not ids.get(item.ref or ""):
        return list  # nothing to point at: empty lists
    gen = sub(item)
    randrange = rng.randrange
    return lambda: [gen() for _ in range(randrange(1, 4))]


_MONEY = frozenset(
    {"amount", "total", "price", "balance", "cost", "subtotal", "fee", "fees", "tax", "paid",
     "due", "salary", "credit", "debit", "refund", "refunded", "charge", "payment", "spend"}
)  # fmt: skip
_SMALL = frozenset({"quantity", "qty", "count", "units", "items", "stock", "seats", "nights"})


def _int_generator(name: str, words: set[str], rng: random.Random) -> Callable[[], int]:
    randrange = rng.randrange
    if words & _SMALL:
        return lambda: randrange(1, 10)
    if words & _MONEY:
        return lambda: randrange(100, 100_000)  # whole currency units or cents: keep > 0
    if "age" in words:
        return lambda: randrange(18, 80)
    if "year" in words:
        return lambda: randrange(2015, 2026)
    if words & {"rating", "stars", "priority", "level"}:
        return lambda: randrange(1, 6)
    if words & {"percent", "pct", "score"}:
        return lambda: randrange(0, 101)
    return lambda: randrange(0, 100)


def _float_generator(name: str, words: set[str], rng: random.Random) -> Callable[[], float]:
    uniform = rng.uniform
    if "balance" in words:
        return lambda: round(uniform(10, 5000), 2)
    if words & _MONEY:
        return lambda: round(uniform(5, 500), 2)
    if words & {"rate", "ratio", "probability", "score", "share"}:
        return lambda: round(rng.random(), 3)
    if words & {"lat", "latitude"}:
        return lambda: round(uniform(-60, 70), 5)
    if words & {"lon", "lng", "longitude"}:
        return lambda: round(uniform(-180, 180), 5)
    if words & {"weight", "kg"}:
        return lambda: round(uniform(0.1, 20), 2)
    if words & _SMALL:
        return lambda: float(rng.randrange(1, 10))
    return lambda: round(uniform(0, 100), 2)


# ---------------------------------------------------------------------------------------------
# Text
# ---------------------------------------------------------------------------------------------

#: fields holding a person's full name, in the order an email is derived from
_FULL_NAMES = ("name", "full_name", "customer_name", "contact_name", "display_name", "owner",
               "holder", "contact")  # fmt: skip


def _cohere(row: dict[str, Any], drawn: set[str]) -> None:
    """Make a row agree with itself: a drawn email fits the row's person (Ada Lovelace is
    ada.lovelace42@example.com), given or drawn. The number stays the email's own draw."""
    emails = [f for f in drawn if f == "email" or f.endswith("_email")]
    if not emails:
        return
    first, last = row.get("first_name"), row.get("last_name")
    if not (isinstance(first, str) and isinstance(last, str)):
        full = next((row[f] for f in _FULL_NAMES if isinstance(row.get(f), str)), None)
        parts = full.split() if isinstance(full, str) else []
        if len(parts) < 2 or not all(p.isalpha() and p[0].isupper() for p in parts):
            return  # not a name ("desk lamp", "Acorn & Co")
        first, last = parts[0], parts[-1]
    for f in emails:
        value = row[f]
        if isinstance(value, str) and "@" in value:
            local, _, domain = value.partition("@")
            number = local[len(local.rstrip("0123456789")) :]
            row[f] = f"{first.lower()}.{last.lower()}{number}@{domain}"


_FIRST = (
    "Ada", "Ben", "Chloe", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kofi",
    "Lena", "Mateo", "Nadia", "Oscar", "Priya", "Quinn", "Rosa", "Sami", "Tara", "Uma", "Victor",
    "Wen", "Ximena", "Yusuf", "Zoe",
)  # fmt: skip
_LAST = (
    "Andersen", "Bauer", "Costa", "Dubois", "Eriksen", "Fischer", "Garcia", "Hughes", "Ito",
    "Jensen", "Kowalski", "Lopez", "Moreau", "Novak", "Okafor", "Patel", "Quist", "Rossi",
    "Silva", "Tanaka", "Ueda", "Varga", "Walsh", "Yilmaz", "Zhang",
)  # fmt: skip
_CITIES = (
    "Lisbon", "Oslo", "Austin", "Osaka", "Lyon", "Porto", "Denver", "Leeds", "Utrecht", "Graz",
    "Turin", "Malmo", "Quebec", "Perth", "Seville", "Krakow", "Dublin", "Ghent",
)  # fmt: skip
_COUNTRIES = (
    ("US", "United States"), ("GB", "United Kingdom"), ("DE", "Germany"), ("FR", "France"),
    ("NL", "Netherlands"), ("ES", "Spain"), ("IT", "Italy"), ("SE", "Sweden"), ("JP", "Japan"),
    ("CA", "Canada"), ("AU", "Australia"), ("BR", "Brazil"), ("IN", "India"), ("PL", "Poland"),
)  # fmt: skip
_CURRENCIES = ("USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "SEK")
_WORDS = (
    "amber", "birch", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "iris", "juniper",
    "kestrel", "lumen", "maple", "nova", "onyx", "pine", "quartz", "river", "sierra", "tundra",
    "umber", "violet", "willow", "zephyr",
)  # fmt: skip
_PRODUCTS = (
    "desk lamp", "coffee grinder", "wool scarf", "trail shoes", "water bottle", "notebook",
    "headphones", "backpack", "tea kettle", "yoga mat", "phone case", "rain jacket",
)  # fmt: skip
_BOOKS = (
    "The Silent Harbor", "A Field Guide to Moss", "Winter in Lisbon", "Notes on Rain",
    "The Cartographer's Daughter", "The Last Lighthouse", "Paper Rivers", "An Atlas of Clouds",
    "The Orchard Year", "Salt and Iron", "Letters from Graz", "The Glass Observatory",
)  # fmt: skip
_TITLES = (
    "Quarterly review", "Onboarding checklist", "Release notes", "Team offsite",
    "Budget draft", "Kickoff meeting", "Roadmap update", "Incident follow-up",
    "Weekly sync", "Design review",
)  # fmt: skip
_PHRASES = (
    "arrived damaged", "wrong size", "changed my mind", "late delivery", "duplicate charge",
    "gift for a friend", "not as described", "missing parts", "please call first",
    "leave at the door",
)  # fmt: skip
_PERSON_FIELDS = ("owner", "holder", "customer", "contact", "author")
_COMPANIES = ("Northwind", "Blue Finch", "Acorn & Co", "Lakeside Labs", "Ironbark", "Solstice")
_STREETS = ("Oak", "Maple", "Cedar", "Elm", "Pine", "Lake", "Hill", "Park", "Mill", "River")
_STREET_KINDS = ("Street", "Avenue", "Road", "Lane", "Way")
_COLORS = ("red", "blue", "green", "black", "white", "grey", "yellow", "navy")
_PERSON_PREFIXES = frozenset(
    {"customer", "owner", "holder", "user", "contact", "recipient", "sender", "full", "account",
     "author", "agent", "assignee", "payee", "payer", "display"}
)  # fmt: skip


def _str_generator(
    spec: WorldSpec,
    record: str,
    name: str,
    words: set[str],
    rng: random.Random,
    ids: Mapping[str, list[str]],
) -> Callable[[], str]:
    choice, randrange = rng.choice, rng.randrange
    last = name.rpartition("_")[2]

    def person() -> str:
        return f"{choice(_FIRST)} {choice(_LAST)}"

    if "email" in words:
        return lambda: (
            f"{choice(_FIRST).lower()}.{choice(_LAST).lower()}{randrange(1, 100)}@example.com"
        )
    if name in ("first_name", "firstname", "given_name"):
        return lambda: choice(_FIRST)
    if name in ("last_name", "lastname", "surname", "family_name"):
        return lambda: choice(_LAST)
    if name in ("username", "user_name", "handle", "login"):
        return lambda: f"{choice(_FIRST).lower()}{randrange(1, 1000)}"
    # What a `name` or `title` is depends on whose it is: a book's title, a product's name.
    kind = set(record.split("_")) | set(plural(record).split("_"))
    if last == "name" or name in ("owner", "holder", "customer", "contact", "author"):
        head = set(name.split("_")[:-1]) or (kind if name == "name" else set())
        if head & {"product", "products", "item", "items"}:
            return lambda: choice(_PRODUCTS)
        if head & {"book", "books", "novel", "novels"}:
            return lambda: choice(_BOOKS)
        if head & {"company", "business", "merchant", "vendor", "supplier", "companies"}:
            return lambda: choice(_COMPANIES)
        if head & {"city", "town", "cities"}:
            return lambda: choice(_CITIES)
        if name == "name" or head & _PERSON_PREFIXES or name in _PERSON_FIELDS:
            return person
    if words & {"city", "town"}:
        return lambda: choice(_CITIES)
    if "country" in words:
        if words & {"code", "iso"}:
            return lambda: choice(_COUNTRIES)[0]
        return lambda: choice(_COUNTRIES)[1]
    if words & {"phone", "mobile", "tel", "telephone"}:
        return lambda: f"+1-555-01{randrange(0, 100):02d}"  # the 555-01xx fictional range
    if "currency" in words:
        return lambda: choice(_CURRENCIES)
    if words & {"zip", "postcode"} or name == "postal_code":
        return lambda: f"{randrange(10000, 100000)}"
    if words & {"address", "street"}:
        return lambda: f"{randrange(1, 200)} {choice(_STREETS)} {choice(_STREET_KINDS)}"
    if last in ("at", "date", "time", "timestamp") or name in ("created", "updated"):
        start = spec.clock_start
        return lambda: (start - timedelta(seconds=randrange(1, WINDOW_S))).isoformat()
    if words & {"url", "website", "link"}:
        return lambda: f"https://example.com/{choice(_WORDS)}-{randrange(1, 1000)}"
    if words & {"description", "note", "notes", "comment", "reason", "message", "summary", "memo"}:
        return lambda: choice(_PHRASES)
    if "title" in words:
        if kind & {"book", "books", "novel", "novels"}:
            return lambda: choice(_BOOKS)
        if not kind & {"product", "products", "item", "items"}:
            return lambda: choice(_TITLES)
        return lambda: choice(_PRODUCTS)
    if words & {"product", "item"}:
        return lambda: choice(_PRODUCTS)
    if "sku" in words:
        return lambda: f"SKU-{randrange(10000, 100000)}"
    if "company" in words:
        return lambda: choice(_COMPANIES)
    if words & {"color", "colour"}:
        return lambda: choice(_COLORS)
    if last == "id":
        # `order_id: str` in a world with an `order` record: point at a real one when we can.
        target = name[: -len("_id")]
        candidates = ids.get(target) or ids.get(plural(target)) or []
        if candidates:
            return lambda: choice(candidates)
        return lambda: str(randrange(1, 100))
    return lambda: f"{choice(_WORDS)}-{randrange(1, 1000)}"
