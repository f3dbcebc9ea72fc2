"""The world's entities and their encyclopedia pages.

A page is a title and a list of sentences, as the wiki environment serves it: a search shows the first
five sentences, so every page states its key facts early, except that with ``late_fact_prob`` one
key fact moves after the fifth sentence (then ``lookup[...]`` finds it). Filler sentences never
name another entity, a year or a city, so they cannot be mistaken for an answer.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from actune.world.config import WorldConfig
from actune.world.names import NameGenerator

__all__ = ["City", "Person", "Company", "Page", "World", "build_world"]

#: Sentences a search shows of a page (the ReAct Wikipedia API: first five sentences).
SEARCH_SENTENCES = 5

_OCCUPATIONS = ("chemist", "engineer", "architect", "economist", "physician", "geologist", "inventor",
                "banker", "botanist", "shipbuilder", "mathematician", "merchant")
_INDUSTRIES = {  # industry -> the word after the company's name
    "shipping": "Lines", "software": "Systems", "textile": "Textiles", "food": "Foods",
    "steel": "Works", "chemicals": "Chemicals", "furniture": "Furnishings", "brewing": "Breweries",
    "pharmaceutical": "Laboratories", "mining": "Mining", "publishing": "Press", "glass": "Glassworks",
}
_PRODUCTS = ("folding chair", "cargo crane", "water pump", "printing press", "ceramic stove", "spirit lamp",
             "weaving loom", "pocket scale", "glass bottle", "copper kettle", "river barge", "signal lamp")
_COLORS = ("green", "blue", "red", "golden", "black", "white", "purple", "grey")
_SHAPES = ("triangle", "circle", "star", "anchor", "tower", "wheel", "leaf", "crown")
_CITY_SIGHTS = ("stone bridges", "covered markets", "clock tower", "salt mines", "olive groves",
                "paper mills", "old harbour", "botanical garden", "painted houses", "hot springs")
_FIELDS = ("chemistry", "law", "physics", "engineering", "economics", "medicine", "geology", "music")
_TOPICS = ("water filtration", "bridge design", "crop rotation", "steam engines", "dye making",
           "tidal charts", "glass making", "soil erosion", "canal locks", "printing inks")
_CITY_SUFFIXES = ("", "", "", "ford", "holm", "vik", "dale", "burg", "mere", "stad")


@dataclass
class City:
    name: str
    province: str
    founded: int
    river: str
    population: int


@dataclass
class Person:
    given: str
    family: str
    born: int
    birth_city: str
    occupation: str
    founded_company: str | None = None

    @property
    def name(self) -> str:
        return f"{self.given} {self.family}"


@dataclass
class Company:
    name: str
    industry: str
    founded: int
    founder: str  # a Person.name

    @property
    def short(self) -> str:
        """The name without the industry word ("Dravon" for "Dravon Systems")."""
        return self.name.rsplit(" ", 1)[0]


@dataclass
class Page:
    title: str
    sentences: list[str]
    #: fact name -> index of the sentence stating it (e.g. "founded" -> 1)
    fact_index: dict[str, int] = field(default_factory=dict)

    def to_record(self) -> dict:
        return {"title": self.title, "sentences": self.sentences}


@dataclass
class World:
    cities: dict[str, City]
    people: dict[str, Person]
    companies: dict[str, Company]
    pages: dict[str, Page]  # title -> page, in corpus order


def _layout(rng: random.Random, intro: str, keys: list[tuple[str, str]], filler: list[str],
            late_fact_prob: float) -> tuple[list[str], dict[str, int]]:
    """Order a page's sentences: intro, key facts (shuffled), filler; maybe one key fact late."""
    keys = list(keys)
    rng.shuffle(keys)
    late: tuple[str, str] | None = None
    if keys and rng.random() < late_fact_prob:
        late = keys.pop()
    body: list[tuple[str | None, str]] = [(name, text) for name, text in keys]
    # Sometimes a filler sentence sits between the key facts (still within the first five).
    fill = [(None, text) for text in filler]
    if fill and len(body) >= 1 and rng.random() < 0.3:
        body.insert(rng.randint(1, len(body)), fill.pop(0))
    body += fill
    sentences = [("intro", intro)] + body
    if late is not None:
        sentences.insert(max(SEARCH_SENTENCES, len(sentences) - 1), late)
    fact_index = {name: i for i, (name, _) in enumerate(sentences) if name is not None}
    return [text for _, text in sentences], fact_index


def _city_page(rng: random.Random, c: City, cfg: WorldConfig) -> Page:
    intro = rng.choice((f"{c.name} is a city in the province of {c.province}.",
                        f"{c.name} is a city in {c.province} province."))
    keys = [
        ("founded", rng.choice((f"It was founded in {c.founded}.", f"The city was founded in {c.founded}."))),
        ("river", f"{c.name} lies on the river {c.river}."),
        ("population", f"It has a population of about {c.population:,}."),
    ]
    sights = rng.sample(_CITY_SIGHTS, 2)
    filler = [f"The city is known for its {sights[0]}.",
              f"Visitors come to see its {sights[1]}.",
              rng.choice(("Its economy rests on trade and crafts.", "Most of its people work in small workshops.",
                          "It has a small university and a public library."))]
    sentences, idx = _layout(rng, intro, keys, filler, cfg.late_fact_prob)
    return Page(c.name, sentences, idx)


def _person_page(rng: random.Random, p: Person, companies: dict[str, Company], cfg: WorldConfig) -> Page:
    a = "an" if p.occupation[0] in "aeiou" else "a"
    intro = rng.choice((f"{p.name} (born {p.born}) is {a} {p.occupation}.",
                        f"{p.name} is {a} {p.occupation} born in {p.born}."))
    keys = [("birth_city", rng.choice((f"{p.family} was born in {p.birth_city}.",
                                       f"{p.name} was born in the city of {p.birth_city}.")))]
    if p.founded_company is not None:
        c = companies[p.founded_company]
        keys.append(("founded_company", rng.choice((f"In {c.founded}, {p.family} founded {c.name}.",
                                                    f"{p.family} founded the company {c.name} in {c.founded}."))))
    fields = rng.choice(_FIELDS)
    topic = rng.choice(_TOPICS)
    filler = [f"{p.family} studied {fields} at university.",
              f"{p.family} is known for work on {topic}.",
              rng.choice((f"{p.family} has two children.", f"{p.family} enjoys sailing and chess.",
                          f"{p.family} has written several books."))]
    if p.founded_company is None:
        filler.append(rng.choice((f"{p.family} taught for many years.", f"{p.family} has lived abroad.")))
    sentences, idx = _layout(rng, intro, keys, filler, cfg.late_fact_prob)
    return Page(p.name, sentences, idx)


def _company_page(rng: random.Random, c: Company, cfg: WorldConfig) -> Page:
    # No city on a company page: a first-hop page that names a city is an answer a small model
    # copies for "In which city was the founder of X born?" (measured: 0% bridge success with it).
    intro = rng.choice((f"{c.name} is a {c.industry} company.", f"{c.name} is a company in the {c.industry} trade."))
    keys = [("founded", rng.choice((f"It was founded in {c.founded} by {c.founder}.",
                                    f"{c.name} was founded by {c.founder} in {c.founded}.")))]
    filler = [f"The company employs about {rng.randrange(2, 90) * 100:,} people.",
              f"Its best-known product is a {rng.choice(_PRODUCTS)}.",
              f"Its logo shows a {rng.choice(_COLORS)} {rng.choice(_SHAPES)}.",
              f"{c.short} sells its goods in {rng.randrange(3, 40)} countries."]
    sentences, idx = _layout(rng, intro, keys, filler, cfg.late_fact_prob)
    return Page(c.name, sentences, idx)


def build_world(cfg: WorldConfig, rng: random.Random) -> World:
    """Draw every entity and write every page; deterministic given ``rng``'s state."""
    names = NameGenerator(rng)
    provinces = [names.token((2,)) for _ in range(cfg.n_provinces)]
    rivers = [names.token((2,)) for _ in range(max(4, cfg.n_cities // 3))]

    cities: dict[str, City] = {}
    for _ in range(cfg.n_cities):
        suffix = rng.choice(_CITY_SUFFIXES)
        name = names.token((2,), suffix=suffix)
        cities[name] = City(name, rng.choice(provinces), rng.randrange(900, 1850), rng.choice(rivers),
                            rng.randrange(8, 900) * 1000 + rng.randrange(0, 10) * 100)
    city_names = list(cities)

    people: dict[str, Person] = {}
    for _ in range(cfg.n_people):
        p = Person(names.token((2,)), names.token((2,)), rng.randrange(1890, 1996),
                   rng.choice(city_names), rng.choice(_OCCUPATIONS))
        people[p.name] = p

    companies: dict[str, Company] = {}
    founders = rng.sample(list(people), cfg.n_companies)
    industries = list(_INDUSTRIES)
    for founder_name in founders:
        founder = people[founder_name]
        industry = rng.choice(industries)
        name = f"{names.token((2,))} {_INDUSTRIES[industry]}"
        # Founders found companies between ages 22 and 60.
        founded = founder.born + rng.randrange(22, min(61, 2025 - founder.born))
        companies[name] = Company(name, industry, founded, founder_name)
        founder.founded_company = name

    pages: dict[str, Page] = {}
    for c in cities.values():
        pages[c.name] = _city_page(rng, c, cfg)
    for p in people.values():
        pages[p.name] = _person_page(rng, p, companies, cfg)
    for c in companies.values():
        pages[c.name] = _company_page(rng, c, cfg)
    return World(cities, people, companies, pages)
