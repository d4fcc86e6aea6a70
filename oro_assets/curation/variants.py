"""A seeded generator of leak-variant problem groups for the clustering benchmark and tests.

Used only when the arena simulator's truth file is not available. Each base task is a product
noun, 0-3 attribute phrases and a price constraint; its variants are paraphrases (template and
comparator wording), reordered attribute phrases, and whitespace / case / punctuation changes.
"""

from __future__ import annotations

import random


def _words(text: str) -> list[str]:
    return text.split()


_TEMPLATES = (
    "Looking for {body}.",
    "Show me {body}.",
    "I want {body}.",
    "Can you find me {body}?",
    "I need {body}.",
    "Please show {body}.",
    "Find {body} for me.",
)
_PRICE = {
    "gt": (
        "priced above {a} pesos",
        "that cost more than {a} PHP",
        "over {a} pesos",
        "costing above {a} PHP",
    ),
    "lt": (
        "priced under {b} pesos",
        "that cost less than {b} PHP",
        "below {b} pesos",
        "cheaper than {b} PHP",
    ),
    "range": ("priced from {a} to {b} pesos", "between {a} and {b} PHP", "costing between {a} and {b} pesos"),
}
_ADJ = _words("""red blue green black white grey pink beige brown purple yellow orange navy gold silver
cotton leather denim silk wool plastic steel wooden glass ceramic bamboo rubber nylon linen
small large medium mini portable waterproof wireless rechargeable foldable organic vintage
unisex men women kids baby travel heavy duty lightweight slim oversized classic modern""")
_NOUN = _words("""shirt jeans dress jacket sneakers sandals backpack wallet watch earrings necklace bracelet
perfume lotion shampoo toner serum sunscreen lipstick mascara cushion blanket pillow lamp fan
kettle blender cooker pan pot knife bottle tumbler mug bowl plate spoon chopsticks charger cable
earphones speaker mouse keyboard monitor tripod case cover strap helmet gloves socks cap hat
umbrella raincoat tent chair table shelf organizer basket bucket broom mop cymbals drum guitar
ukulele paddle racket ball bike pump tire wheel toy puzzle doll crayons notebook pen marker
stapler tape glue scissors ruler calculator battery bulb switch socket drill hammer wrench""")
_FILLER = ("nice", "good quality", "affordable", "durable", "stylish", "reliable", "decent", "quality")
_ATTR_KEYS = (
    "in size {v}",
    "with a {v} finish",
    "made of {v}",
    "in {v} color",
    "with {v} design",
    "from brand {v}",
)
_ATTR_VALS = _words("""xs s m l xl xxl eu30 eu32 matte glossy cotton leather steel plastic floral plain striped
checkered acme zenith nova orion apex vertex lumen terra aqua ember""")


def base_task(rng: random.Random) -> dict:
    attrs = []
    for _ in range(rng.randint(0, 3)):
        attrs.append(rng.choice(_ATTR_KEYS).format(v=rng.choice(_ATTR_VALS)))
    kind = rng.choice(tuple(_PRICE))
    a = rng.randint(10, 900)
    b = a + rng.randint(20, 2000)
    adjectives = rng.sample(_ADJ, rng.randint(1, 3))
    return {"noun": " ".join(adjectives + [rng.choice(_NOUN)]), "attrs": attrs, "price": (kind, a, b)}


def render(task: dict, rng: random.Random, variant: bool) -> str:
    kind, a, b = task["price"]
    attrs = list(task["attrs"])
    template, price_form = _TEMPLATES[0], _PRICE[kind][0]
    if variant:
        rng.shuffle(attrs)
        template = rng.choice(_TEMPLATES)
        price_form = rng.choice(_PRICE[kind])
    noun = task["noun"]
    if variant and rng.random() < 0.3:  # paraphrase adds a descriptive word the base lacks
        noun = rng.choice(_FILLER) + " " + noun
    parts = [noun, *attrs, price_form.format(a=a, b=b)]
    body = (", " if variant and rng.random() < 0.5 else " ").join(parts)
    text = template.format(body=body)
    if variant:
        r = rng.random()
        if r < 0.3:
            text = "  ".join(text.split(" "))
        elif r < 0.5:
            text = text.upper()
        elif r < 0.6:
            text = text.replace(",", " ;")
    return text


def variant_problems(n_problems: int, variants_per_group: int = 5, seed: int = 0) -> list[dict]:
    """``n_problems`` problems in groups of ``variants_per_group``; each row carries
    ``problem_id``, ``query`` and the truth ``variant_group``."""
    rng = random.Random(seed)
    out: list[dict] = []
    group = 0
    while len(out) < n_problems:
        task = base_task(rng)
        for v in range(variants_per_group):
            if len(out) >= n_problems:
                break
            out.append(
                {
                    "problem_id": f"vp_{group:07d}_{v}",
                    "query": render(task, rng, variant=v > 0),
                    "variant_group": f"g{group:07d}",
                }
            )
        group += 1
    return out
