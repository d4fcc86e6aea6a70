"""Synthetic problem pool + catalogue generated around it ("world"), and catalogues around real problems.

Design (all randomness from one ``random.Random(seed)``; output is a pure function of the args):

* every problem item gets a unique invented brand word; its key words are
  ``brand + descriptor + noun`` and the query states them verbatim, prices as plain numbers
  ("priced between 120 and 340 pesos", "under 500", "over 80") and services by name;
* the ground-truth product carries the key words plus 2-3 filler words, satisfies every
  constraint and is the reward's ``product_id`` / ``title``;
* near-miss distractors each break exactly one constraint (price, service, SKU option,
  attribute, shop, budget). They have SHORTER titles with the same key words, so they outrank
  the ground truth in BM25 when the agent ignores that constraint, while their title still
  clears the title-similarity threshold (so only the broken field fails);
* background products (shared brand pool, same taxonomy) fill the rest.
Leak variants re-render a problem's query (paraphrase, reordered clauses, formatting, asked
differently) with the same reward; ``variant_groups`` maps every problem id to its group.
"""

from __future__ import annotations

import math
import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from oro_assets.arena.catalogue import Catalogue
from oro_assets.arena.problems import problem_id_for, reward_items
from oro_assets.arena.scoring import budget_ok, price_after_voucher, price_ok
from oro_assets.arena.search import SERVICES

# (category path, nouns, descriptors, attributes {key: values}, sku options {key: values}, price scale)
TAXONOMY: list[tuple[str, list[str], list[str], dict[str, list[str]], dict[str, list[str]], float]] = [
    ("Fashion > Women's Bags > Tote Bags", ["tote bag", "shoulder bag", "crossbody bag"], ["canvas", "leather", "waterproof", "vintage"],
     {"material": ["canvas", "pu leather", "nylon", "cotton and linen"], "fa_pattern": ["plain", "floral", "striped"]},
     {"color_family": ["black", "beige", "brown", "pink", "blue"]}, 350.0),
    ("Fashion > Men's Clothing > T-Shirts", ["t shirt", "polo shirt", "tank top"], ["cotton", "oversized", "dri fit", "graphic"],
     {"clothing_material": ["cotton", "polyester", "microfiber"], "fa_general_styles": ["casual", "sporty", "streetwear"]},
     {"size": ["int:s", "int:m", "int:l", "int:xl"], "color_family": ["white", "black", "grey", "navy"]}, 280.0),
    ("Fashion > Women's Clothing > Jeans", ["denim jeans", "wide leg pants", "jogger pants"], ["high waist", "baggy", "slim", "stretch"],
     {"waist_type": ["high", "mid", "low"], "jeans_fit_type": ["baggy fit", "regular", "skinny"]},
     {"size": ["waist:26", "waist:28", "waist:30", "waist:32"]}, 520.0),
    ("Electronics > Audio > Speakers", ["bluetooth speaker", "soundbar", "party speaker"], ["portable", "wireless", "mini", "bass"],
     {"bluetooth": ["yes", "no"], "ptb_speaker_features": ["waterproof", "built-in microphone", "rgb lights"]},
     {"color_family": ["red", "black", "blue", "green"]}, 1400.0),
    ("Electronics > Mobile Accessories > Phone Cases", ["phone case", "screen protector", "phone holder"], ["shockproof", "magnetic", "clear", "matte"],
     {"case_function": ["built-in stand", "card holder", "shockproof"], "material": ["silicone", "tpu", "tempered glass"]},
     {"compatibility_by_model": ["oppo a16", "iphone 13", "redmi note 12", "samsung a54"]}, 150.0),
    ("Home & Living > Kitchen > Cookware", ["frying pan", "rice cooker", "colander"], ["non stick", "stainless", "ceramic", "heavy duty"],
     {"cookware_material": ["stainless steel", "aluminum", "ceramic", "plastic"], "dishwasher_safe": ["yes", "no"]},
     {"size": ["20cm", "24cm", "28cm"], "color_family": ["white", "black", "red"]}, 900.0),
    ("Home & Living > Bath > Towels", ["bath towel", "face towel", "bathrobe"], ["absorbent", "microfiber", "quick dry", "soft"],
     {"material": ["cotton", "microfiber", "bamboo"], "pack_type": ["single", "set of 3"]},
     {"color_family": ["white", "grey", "pink", "beige"]}, 220.0),
    ("Beauty > Skincare > Toners", ["toner", "serum", "moisturizer"], ["hydrating", "brightening", "soothing", "vitamin c"],
     {"skin_type": ["oily", "dry", "combination", "sensitive"], "units_hb": ["single item", "bundle"]},
     {"volume": ["50ml", "100ml", "150ml"]}, 420.0),
    ("Beauty > Makeup > Lipstick", ["lip tint", "lipstick", "lip balm"], ["matte", "velvet", "glossy", "long lasting"],
     {"finish_lipstick": ["matte", "creamy/satin", "glossy"], "makeup_lip_benefit": ["waterproof", "moisturizing", "smooth"]},
     {"color_text": ["01#", "02#", "03#", "06#"]}, 190.0),
    ("Sports & Outdoors > Cycling > Helmets", ["bike helmet", "cycling gloves", "bike light"], ["lightweight", "breathable", "reflective", "pro"],
     {"recommended_gender": ["unisex", "men", "women"], "sports_material": ["eps", "polycarbonate", "nylon"]},
     {"size": ["m", "l", "xl"], "color_family": ["black", "white", "red"]}, 760.0),
    ("Toys & Games > Building > Blocks", ["building blocks", "magnetic tiles", "puzzle set"], ["educational", "creative", "classic", "jumbo"],
     {"recommended_age": ["3 years and above", "6 years and above"], "interest": ["construction", "science"]},
     {"variation": ["68 pcs", "100 pcs", "150 pcs"]}, 640.0),
    ("Groceries > Pantry > Spices", ["chili powder", "black pepper", "garlic powder"], ["organic", "pure", "fine ground", "premium"],
     {"packaging_type": ["bag", "bottle", "jar"], "pack_type": ["single", "bundle"]},
     {"weight": ["100g", "250g", "500g", "1kg"]}, 160.0),
    ("Automotive > Car Accessories > Stickers", ["car sticker", "seat cover", "dash cam"], ["reflective", "universal", "premium", "sporty"],
     {"make": ["toyota", "honda", "ford", "mitsubishi"], "material": ["vinyl", "leather", "fabric"]},
     {"color_family": ["red", "black", "silver", "white"]}, 480.0),
    ("Stationery > Writing > Pens", ["gel pen", "pencil case", "notebook"], ["erasable", "cute", "large capacity", "refillable"],
     {"stationery_pen_type": ["gel pens", "ballpoint pens", "markers"], "material": ["oxford", "plastic", "paper"]},
     {"color_family": ["pink", "blue", "black", "purple"]}, 90.0),
    ("Pets > Dog Supplies > Grooming", ["dog shampoo", "pet brush", "dog bed"], ["dry", "hypoallergenic", "orthopedic", "gentle"],
     {"pet_size": ["small", "medium", "large"], "scent": ["lavender", "unscented", "coconut"]},
     {"size": ["s", "m", "l"]}, 330.0),
]
FILLERS = ["new", "original", "best", "seller", "quality", "fashion", "trendy", "durable", "sale", "hot",
           "authentic", "korean", "style", "gift", "value", "pack", "edition", "classic", "modern", "everyday"]
SERVICE_PHRASES = {
    "official": ["from an official store", "sold by an official store"],
    "freeShipping": ["with free shipping", "that ships free (free shipping)"],
    "COD": ["with cash on delivery (COD)", "available for COD cash on delivery"],
    "flashsale": ["on flash sale", "with a flash sale deal"],
}
_CONS = "bcdfghjklmnprstvz"
_VOWELS = "aeiou"


def _pseudo_word(rng: random.Random, used: set[str]) -> str:
    while True:
        n = rng.choice((2, 3, 3))
        w = "".join(rng.choice(_CONS) + rng.choice(_VOWELS) for _ in range(n))
        if rng.random() < 0.5:
            w += rng.choice("nrsx")
        if w not in used:
            used.add(w)
            return w


@dataclass
class ItemSpec:
    tax: int
    brand: str
    descriptor: str
    noun: str
    price_kind: str | None = None  # between | less | greater
    lo: float | None = None
    hi: float | None = None
    services: list[str] = field(default_factory=list)
    sku: dict[str, str] = field(default_factory=dict)
    attrs: dict[str, str] = field(default_factory=dict)
    product: dict | None = None

    @property
    def key_words(self) -> str:
        return f"{self.brand} {self.descriptor} {self.noun}"

    def reward(self) -> dict:
        assert self.product is not None
        r: dict[str, Any] = {"product_id": self.product["product_id"], "title": [self.product["title"]]}
        if self.sku:
            r["sku_options"] = [dict(self.sku)]
        if self.attrs:
            r["attributes"] = [{k: [v]} for k, v in self.attrs.items()]
        if self.services:
            r["service"] = list(self.services)
        if self.price_kind == "between":
            r["price"] = [{"between": [_num(self.lo), _num(self.hi)]}]
        elif self.price_kind == "less":
            r["price"] = [{"less than": [None, _num(self.hi)]}]
        elif self.price_kind == "greater":
            r["price"] = [{"greater than": [_num(self.lo), None]}]
        return r


@dataclass
class World:
    seed: int
    problems: list[dict]
    catalogue: Catalogue
    variant_groups: dict[str, str]  # every problem id -> its leak group (truth: never in the problems)
    variant_info: dict[str, dict[str, str]] = field(default_factory=dict)  # variant id -> variant_of, variant_kind


class _Builder:
    """Holds the RNG, id pools and products while a catalogue is assembled."""

    def __init__(self, seed: int, n_shops: int) -> None:
        self.rng = random.Random(seed)
        self.used_words: set[str] = {w for t in TAXONOMY for s in (t[1] + t[2]) for w in s.split()} | set(FILLERS)
        self.products: list[dict] = []
        self.ids: set[str] = set()
        shops: set[str] = set()
        while len(shops) < n_shops:
            shops.add(str(self.rng.randrange(100_000, 9_999_999)))
        self.shops = sorted(shops)
        self.brand_pool = [_pseudo_word(self.rng, self.used_words) for _ in range(300)]

    def new_id(self) -> str:
        while True:
            pid = str(self.rng.randrange(100_000_000, 5_999_999_999))
            if pid not in self.ids:
                self.ids.add(pid)
                return pid

    def add(self, **kw: Any) -> dict:
        rng = self.rng
        tax = TAXONOMY[kw.get("tax", 0)]
        title = kw["title"]
        brand = kw.get("brand") or ""
        sku_fixed: dict[str, str] = kw.get("sku") or {}
        sku_avoid: dict[str, str] = kw.get("sku_avoid") or {}
        sku_keys = list(tax[4])
        skus: dict[str, dict[str, str]] = {}
        for n in range(kw.get("n_skus") or rng.randint(1, 3)):
            opt = {}
            for k in sku_keys:
                choices = [v for v in tax[4][k] if sku_avoid.get(k) != v] or tax[4][k]
                opt[k] = rng.choice(choices)
            skus[str(n + 1)] = opt
        if sku_fixed:
            # the required options all sit together on one SKU
            slot = str(rng.randint(1, len(skus)))
            skus[slot] = {**skus[slot], **sku_fixed}
        attrs: dict[str, list[str]] = {}
        attr_avoid: dict[str, str] = kw.get("attr_avoid") or {}
        for k, vals in tax[3].items():
            choices = [v for v in vals if attr_avoid.get(k) != v] or vals
            attrs[k] = [rng.choice(choices)]
        for k, v in (kw.get("attrs") or {}).items():
            attrs[k] = [v]
        if brand:
            attrs["brand"] = [brand]
        services = kw.get("services")
        if services is None:
            services = sorted((s for s in SERVICES if rng.random() < 0.3), key=SERVICES.index)
        avoid_services = set(kw.get("avoid_services") or [])
        services = [s for s in SERVICES if s in set(services) - avoid_services]
        price = float(kw["price"])
        product = {
            "product_id": kw.get("product_id") or self.new_id(),
            "shop_id": kw.get("shop_id") or rng.choice(self.shops),
            "brand": brand,
            "category": tax[0],
            "title": title,
            "short_description": f"{title}. Great {tax[1][0]} for everyday use.",
            "description": f"{title}. Brand: {brand or 'no brand'}. Category: {tax[0]}. Ships within 3 days.",
            "specification": "; ".join(f"{k}: {v[0]}" for k, v in attrs.items()),
            "price": price,
            "sold_count": kw.get("sold_count", rng.randrange(0, 5000)),
            "sku_options": skus,
            "attributes": attrs,
            "service": services,
        }
        self.products.append(product)
        return product

    def background(self, n: int) -> None:
        rng = self.rng
        for _ in range(n):
            t = rng.randrange(len(TAXONOMY))
            tax = TAXONOMY[t]
            brand = rng.choice(self.brand_pool)
            words = [brand, rng.choice(tax[2]), rng.choice(tax[1]), *rng.sample(FILLERS, rng.randint(2, 4))]
            self.add(tax=t, title=_title(words), brand=brand, price=_price(rng, tax[5]))


def _num(x: float | None) -> int | float | None:
    return int(x) if x is not None and float(x).is_integer() else x


def _title(words: list[str]) -> str:
    return " ".join(w[:1].upper() + w[1:] for w in " ".join(words).split())


def _price(rng: random.Random, scale: float) -> float:
    return float(max(5, round(scale * math.exp(rng.gauss(0.0, 0.5)))))


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


# ----------------------------------------------------------------------------- query rendering
def _price_phrase(spec: ItemSpec, style: int) -> str:
    lo, hi = spec.lo, spec.hi
    if spec.price_kind == "between":
        return ["priced between {lo} and {hi} pesos", "priced from {lo} to {hi} PHP",
                "costing between {lo} and {hi} pesos"][style % 3].format(lo=_fmt(lo), hi=_fmt(hi))
    if spec.price_kind == "less":
        return ["under {hi} pesos", "priced under {hi} PHP", "costing less than {hi} pesos"][style % 3].format(hi=_fmt(hi))
    if spec.price_kind == "greater":
        return ["over {lo} pesos", "priced over {lo} PHP", "costing more than {lo} pesos"][style % 3].format(lo=_fmt(lo))
    return ""


def option_clauses(sku: Mapping[str, str], attrs: Mapping[str, str], style: int) -> list[str]:
    """How a request asks for variant options ("in 1kg" / "in weight 1kg") and attributes ("with pack type bundle")."""
    return ([f"in {k.replace('_', ' ')} {v}" if style % 2 else f"in {v}" for k, v in sku.items()]
            + [f"with {k.replace('_', ' ')} {v}" for k, v in attrs.items()])


def _item_clauses(spec: ItemSpec, style: int) -> list[str]:
    clauses = option_clauses(spec.sku, spec.attrs, style)
    for s in spec.services:
        clauses.append(SERVICE_PHRASES[s][style % 2])
    price = _price_phrase(spec, style)
    if price:
        clauses.append(price)
    return clauses


def _item_text(spec: ItemSpec, style: int, reorder: bool, rng: random.Random) -> str:
    clauses = _item_clauses(spec, style)
    if reorder and len(clauses) > 1:
        head, last = clauses[:-1], clauses[-1:]
        rng.shuffle(head)
        clauses = head + last
    text = spec.key_words
    if clauses:
        text += " " + (", ".join(clauses[:-1]) + " and " + clauses[-1] if len(clauses) > 1 else clauses[0])
    return text


_PRODUCT_OPENERS = ["Looking for a {x}.", "Show me a {x}.", "I want to buy a {x}.", "Find me a {x}."]
SHOP_OPENERS = ["I'm looking for a shop that offers all of these: {x}.",
                "Find a shop selling these items: {x}.",
                "Which store has all of the following: {x}?"]
_ORDINALS = ["First", "Second", "Third", "Fourth"]


def _voucher_text(v: dict) -> str:
    applies = ("The voucher only applies to the products from the same shop." if v["voucher_type"] == "shop"
               else "The voucher applies to all products.")
    if v["discount_type"] == "fixed":
        rule3 = f"It provides a fixed discount of `{_fmt(v['face_value'])}`."
    else:
        rule3 = f"It provides a percentage discount of `{round(v['discount'] * 100)}%` with a cap of `{_fmt(v['cap'])}`."
    return (f"\n\nMy budget is only `{_fmt(v['budget'])}`, but I have a voucher with the following rules:\n"
            f"1. {applies}\n2. It is valid only when the total price of the products exceeds "
            f"`{_fmt(v['threshold'])}`.\n3. {rule3}")


def render_query(category: str, specs: list[ItemSpec], voucher: dict | None, style: int, reorder: bool,
                 rng: random.Random) -> str:
    items = [_item_text(s, style, reorder, rng) for s in specs]
    if category == "Shop":
        body = " ".join(f"{_ORDINALS[i]}, a {t}." for i, t in enumerate(items)).rstrip(".")
        text = SHOP_OPENERS[style % len(SHOP_OPENERS)].format(x=body)
    else:
        joined = items[0] if len(items) == 1 else ", and also a ".join(items)
        text = _PRODUCT_OPENERS[style % len(_PRODUCT_OPENERS)].format(x=joined)
    if voucher:
        text += _voucher_text(voucher)
    return text


def _reformat(text: str, rng: random.Random) -> str:
    """Whitespace / case / punctuation changes that keep every word and number."""
    kind = rng.randrange(4)
    if kind == 0:
        return "  " + text.replace(", ", " ,  ").replace(" a ", "  a ") + "  "
    if kind == 1:
        return text.lower()
    if kind == 2:
        return text.replace(". ", ".\n").replace(", ", ",\n")
    return text.upper()[:1] + text[1:].replace(".", " !").replace("?", " ??")


# ----------------------------------------------------------------------------- world
def _make_spec(b: _Builder, difficulty: str, *, with_price: bool = True) -> ItemSpec:
    rng = b.rng
    t = rng.randrange(len(TAXONOMY))
    tax = TAXONOMY[t]
    spec = ItemSpec(tax=t, brand=_pseudo_word(rng, b.used_words), descriptor=rng.choice(tax[2]), noun=rng.choice(tax[1]))
    extras = {"easy": 0, "medium": 1, "hard": rng.randint(2, 3)}[difficulty]
    kinds = rng.sample(["service", "sku", "attr"], k=min(extras, 3))
    for kind in kinds:
        if kind == "service":
            spec.services = sorted(rng.sample(list(SERVICES), k=1 if difficulty != "hard" else rng.randint(1, 2)),
                                   key=SERVICES.index)
        elif kind == "sku":
            k = rng.choice(list(tax[4]))
            spec.sku = {k: rng.choice(tax[4][k])}
        else:
            k = rng.choice(list(tax[3]))
            spec.attrs = {k: rng.choice(tax[3][k])}
    price = _price(rng, tax[5])
    if with_price:
        spec.price_kind = rng.choice(["between", "between", "less", "greater"])
        if spec.price_kind == "between":
            spec.lo, spec.hi = float(max(1, math.floor(price * rng.uniform(0.5, 0.85)))), float(math.ceil(price * rng.uniform(1.15, 1.6)))
        elif spec.price_kind == "less":
            spec.hi = float(math.ceil(price * rng.uniform(1.15, 1.6)))
        else:
            spec.lo = float(max(1, math.floor(price * rng.uniform(0.5, 0.85))))
    spec.product = {"price": price}  # placeholder until the product is built
    return spec


def _out_of_range_prices(spec: ItemSpec, rng: random.Random) -> list[float]:
    """Two prices that violate the item's price constraint (above hi and/or below lo)."""
    if spec.price_kind is None:
        return []
    above = [float(math.ceil(spec.hi * rng.uniform(1.2, 2.0)) + 1 + k) for k in (0, 7)] if spec.hi is not None else []
    below = [float(math.floor(spec.lo * rng.uniform(0.3, 0.8)) - 1 - k) for k in (0, 1)] if spec.lo is not None else []
    below = [p for p in below if p >= 1]
    if above and below:
        return [above[0], below[0]]
    return (above or below)[:2]


def _materialise(b: _Builder, spec: ItemSpec, shop_id: str | None, *, shop_twin: bool, budget_twin_price: float | None) -> None:
    rng = b.rng
    tax = TAXONOMY[spec.tax]
    price = spec.product["price"] if spec.product else _price(rng, tax[5])
    fillers = rng.sample(FILLERS, rng.randint(2, 3))
    gt_words = [spec.brand, spec.descriptor, spec.noun, *fillers]
    # distractors carry one SKU, the ground truth 2-3: their index text is shorter, so they outrank
    # the ground truth in BM25 whenever the agent ignores the constraint they break
    common = {"tax": spec.tax, "brand": spec.brand, "sku": spec.sku, "attrs": spec.attrs, "n_skus": 1}
    gt = b.add(title=_title(gt_words), price=price, shop_id=shop_id, services=list(spec.services) or None,
               **{**common, "n_skus": rng.randint(2, 3)})
    spec.product = gt
    short = _title([spec.brand, spec.descriptor, spec.noun, fillers[0]])
    shorter = _title([spec.brand, spec.descriptor, spec.noun])
    # price breakers: everything else matches
    for p in _out_of_range_prices(spec, rng):
        b.add(title=short, price=p, services=list(gt["service"]), sold_count=rng.randrange(3000, 9000), **common)
    if spec.services:
        b.add(title=short, price=price, services=[s for s in gt["service"] if s not in spec.services],
              avoid_services=spec.services, sold_count=rng.randrange(3000, 9000), **common)
    if spec.sku:
        b.add(title=shorter, price=price, services=list(gt["service"]), sku_avoid=spec.sku,
              **{**common, "sku": {}, "n_skus": rng.randint(2, 3)})
    if spec.attrs:
        other = {k: next((v for v in TAXONOMY[spec.tax][3][k] if v != val), "not " + val) for k, val in spec.attrs.items()}
        b.add(title=shorter, price=price, services=list(gt["service"]),
              **{**common, "attrs": other, "n_skus": rng.randint(2, 3)})
    if shop_twin:
        twin_shop = rng.choice([s for s in b.shops if s != gt["shop_id"]])
        b.add(title=short, price=price, services=list(gt["service"]), shop_id=twin_shop,
              sold_count=rng.randrange(3000, 9000), **common)
    if budget_twin_price is not None:
        b.add(title=short, price=budget_twin_price, services=list(gt["service"]),
              sold_count=rng.randrange(3000, 9000), **common)


def _make_voucher(rng: random.Random, total: float, voucher_type: str) -> dict:
    threshold = float(max(1, math.floor(total * rng.uniform(0.3, 0.95))))
    if rng.random() < 0.5:
        v = {"voucher_type": voucher_type, "threshold": threshold, "discount_type": "fixed",
             "face_value": float(max(1, round(total * rng.uniform(0.08, 0.3)))), "discount": None, "cap": None}
    else:
        d = rng.choice([0.1, 0.15, 0.2, 0.25, 0.3, 0.35])
        cap = float(max(1, round(total * d * rng.uniform(0.5, 1.5))))
        v = {"voucher_type": voucher_type, "threshold": threshold, "discount_type": "percentage",
             "face_value": None, "discount": d, "cap": cap}
    after = round(price_after_voucher(total, v), 2)
    v["price_after_voucher"] = after
    if rng.random() < 0.6:  # passes only with the voucher
        v["budget"] = float(math.ceil(after + (total - after) * rng.uniform(0.1, 0.6)))
        if v["budget"] >= total and math.ceil(after) < total:
            v["budget"] = float(math.ceil(after))
    else:
        v["budget"] = float(math.ceil(total + rng.uniform(1, max(2.0, total * 0.1))))
    return {k: (_num(x) if isinstance(x, float) and k != "discount" else x) for k, x in v.items()}


def _new_problem(b: _Builder, idx: int, category: str, difficulty: str, counts: dict[str, int]) -> tuple[dict, list[ItemSpec]]:
    rng = b.rng
    voucher = None
    if category == "Product":
        specs = [_make_spec(b, difficulty)]
        _materialise(b, specs[0], None, shop_twin=False, budget_twin_price=None)
    elif category == "Shop":
        n = rng.randint(2, 4)
        d_item = {"easy": "easy", "medium": rng.choice(["easy", "medium"]), "hard": "medium"}[difficulty]
        specs = [_make_spec(b, d_item, with_price=rng.random() < 0.7) for _ in range(n)]
        shop = rng.choice(b.shops)
        for s in specs:
            _materialise(b, s, shop, shop_twin=True, budget_twin_price=None)
    else:
        n = {"easy": rng.randint(1, 2), "medium": 2, "hard": 3}[difficulty]
        voucher_type = "shop" if rng.random() < 0.25 else "platform"
        d_item = {"easy": "easy", "medium": "easy", "hard": "medium"}[difficulty]
        specs = [_make_spec(b, d_item, with_price=False) for _ in range(n)]
        shop = rng.choice(b.shops) if voucher_type == "shop" else None
        for s in specs:
            _materialise(b, s, shop, shop_twin=False, budget_twin_price=None)
        total = sum(s.product["price"] for s in specs)
        voucher = _make_voucher(rng, total, voucher_type)
        for s in specs:  # expensive twins: a basket containing one breaks the budget even with the voucher
            twin = s.product["price"] + total
            while budget_ok(total - s.product["price"] + twin, voucher, 1):
                twin += total
            _materialise_twin(b, s, twin)
    counts[category] = counts.get(category, 0) + 1
    problem: dict[str, Any] = {
        "problem_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "query": render_query(category, specs, voucher, style=rng.randrange(12), reorder=False, rng=rng),
        "category": category,
        "difficulty": difficulty,
        "title": f"{category} {counts[category]}",
        "reward": specs[0].reward() if category == "Product" else [s.reward() for s in specs],
        "source": "simulator",
    }
    if voucher:
        problem["voucher"] = voucher
    return problem, specs


def _materialise_twin(b: _Builder, spec: ItemSpec, price: float) -> None:
    gt = spec.product
    b.add(tax=spec.tax, brand=spec.brand, sku=spec.sku, attrs=spec.attrs, n_skus=1,
          title=_title([spec.brand, spec.descriptor, spec.noun]),
          price=float(price), services=list(gt["service"]), sold_count=b.rng.randrange(3000, 9000))


def _variants(problem: dict, specs: list[ItemSpec], rng: random.Random, k: int,
              kinds_out: list[str]) -> list[dict]:
    """``k`` leak variants (new ids, same reward); their kinds are appended to ``kinds_out``."""
    out: list[dict] = []
    kinds = ["paraphrase", "reorder", "format", "asked_differently"]
    for _ in range(k):
        kind = rng.choice(kinds)
        style = rng.randrange(12)
        if kind == "paraphrase":
            q = render_query(problem["category"], specs, problem.get("voucher"), style=style, reorder=False, rng=rng)
        elif kind == "reorder":
            q = render_query(problem["category"], specs, problem.get("voucher"), style=style, reorder=True, rng=rng)
        elif kind == "format":
            q = _reformat(problem["query"], rng)
        else:
            q = render_query(problem["category"], specs, problem.get("voucher"), style=style + 1, reorder=True, rng=rng)
            q = q.replace("Looking for", "Can you help me find").replace("Show me", "I need")
        seen = {problem["query"], *(v["query"] for v in out)}
        tries = 0
        while q in seen:
            tries += 1
            q = _reformat(q, rng) if tries < 4 else q + " Thanks!"
        v = {**problem, "problem_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)), "query": q}
        out.append(v)
        kinds_out.append(kind)
    return out


def build_world(seed: int, n_problems: int = 600, n_products: int = 20000, *, variant_share: float = 0.3,
                category_shares: tuple[float, float, float] = (0.4, 0.3, 0.3)) -> World:
    """Problem pool (``n_problems`` including leak variants) and a catalogue of ``n_products`` around it."""
    if n_problems < 1 or n_products < 1:
        raise ValueError("n_problems and n_products must be positive")
    b = _Builder(seed, n_shops=max(20, n_products // 50))
    rng = b.rng
    counts: dict[str, int] = {}
    problems: list[dict] = []
    groups: dict[str, str] = {}
    variant_info: dict[str, dict[str, str]] = {}
    cats = ["Product", "Shop", "Voucher"]
    while len(problems) < n_problems:
        category = rng.choices(cats, weights=category_shares)[0]
        difficulty = rng.choice(["easy", "medium", "hard"])
        base, specs = _new_problem(b, len(problems), category, difficulty, counts)
        group = "vg_" + base["problem_id"][:8] + base["problem_id"][-4:]
        problems.append(base)
        groups[base["problem_id"]] = group
        if rng.random() < variant_share and len(problems) < n_problems:
            kinds: list[str] = []
            for v, kind in zip(_variants(base, specs, rng, min(rng.randint(1, 3), n_problems - len(problems)), kinds),
                               kinds, strict=True):
                problems.append(v)
                groups[v["problem_id"]] = group
                variant_info[v["problem_id"]] = {"variant_of": base["problem_id"], "variant_kind": kind}
    if len(b.products) < n_products:
        b.background(n_products - len(b.products))
    order = list(range(len(b.products)))
    rng.shuffle(order)
    catalogue = Catalogue([b.products[i] for i in order])
    return World(seed=seed, problems=problems, catalogue=catalogue, variant_groups=groups, variant_info=variant_info)


# ----------------------------------------------------------------------------- real problems
def _feasible_price(constraints: list[dict], rng: random.Random, target: float | None = None) -> float:
    lo, hi = 1.0, None
    for c in constraints or []:
        for kind, bounds in c.items():
            a, z = (list(bounds) + [None, None])[:2]
            if kind == "between":
                lo, hi = max(lo, float(a)), (float(z) if hi is None else min(hi, float(z)))
            elif kind == "less than" and z is not None:
                hi = float(z) - 1 if hi is None else min(hi, float(z) - 1)
            elif kind == "greater than" and a is not None:
                lo = max(lo, float(a) + 1)
    if target is not None:
        p = max(lo, target) if hi is None else min(max(lo, target), hi)
        return round(p, 2)
    if hi is None:
        return float(round(lo * rng.uniform(1.1, 2.0) + rng.randint(1, 50)))
    if hi < lo:
        return lo
    return float(round(rng.uniform(lo, hi), 2)) if hi - lo < 2 else float(rng.randint(math.ceil(lo), math.floor(hi)))


def _voucher_total(v: dict) -> float | None:
    """Back-compute the ground-truth basket total from ``price_after_voucher``."""
    after = v.get("price_after_voucher")
    if after is None:
        return None
    if v.get("discount_type") == "fixed":
        return float(after) + float(v.get("face_value") or 0)
    d = float(v.get("discount") or 0)
    for cand in ([float(after) / (1 - d)] if d < 1 else []) + ([float(after) + float(v["cap"])] if v.get("cap") else []):
        if abs(price_after_voucher(cand, v) - float(after)) < 0.05:
            return cand
    return None


def build_catalogue_for_problems(problems: list[dict], seed: int, n_background: int = 2000) -> Catalogue:
    """Catalogue in which each problem's ground-truth products exist and satisfy its reward
    (prices inside the ranges; voucher baskets sum to the total implied by ``price_after_voucher``),
    with one near-miss distractor per constraint (price, service, SKU, attribute, shop twin)."""
    b = _Builder(seed, n_shops=max(20, (len(problems) * 3 + n_background) // 40))
    rng = b.rng
    by_id: dict[str, dict] = {}
    b.ids.update(str(pid) for prob in problems for pid in (r.get("product_id") for r in reward_items(prob)))
    # voucher baskets first: their prices are pinned by the voucher arithmetic, other problems
    # sharing a product only need a range that _merge can still satisfy
    for prob in sorted(problems, key=lambda p: p.get("category") != "Voucher"):
        items = reward_items(prob)
        shop = rng.choice(b.shops) if prob.get("category") == "Shop" or (
            isinstance(prob.get("voucher"), dict) and prob["voucher"].get("voucher_type") == "shop") else None
        prices = [_feasible_price(r.get("price") or [], rng) for r in items]
        v = prob.get("voucher") if isinstance(prob.get("voucher"), dict) else None
        if v:
            total = _voucher_total(v)
            if total is not None:
                fixed = {i: by_id[str(r.get("product_id"))]["price"] for i, r in enumerate(items)
                         if str(r.get("product_id")) in by_id}
                prices = _allocate(items, total, rng, fixed)
        for r, price in zip(items, prices, strict=True):
            pid = str(r.get("product_id"))
            titles = r.get("title") or ["Product"]
            title = titles[0] if isinstance(titles, list) else str(titles)
            if pid in by_id:
                _merge(by_id[pid], r)
                continue
            sku = {str(k): str(val) for o in r.get("sku_options") or [] for k, val in o.items()}
            attrs = {str(k): str(vals[0] if isinstance(vals, list) and vals else vals)
                     for a in r.get("attributes") or [] for k, vals in a.items()}
            gt = b.add(product_id=pid, title=title, price=price, shop_id=shop, services=list(r.get("service") or []),
                       tax=rng.randrange(len(TAXONOMY)), brand="")
            gt["sku_options"] = {"1": sku or {"variation": "default"}, "2": {k: "other " + x for k, x in sku.items()}} if sku \
                else {"1": {"variation": "default"}}
            gt["attributes"] = {k: list(vals) if isinstance(vals, list) else [vals]
                                for a in r.get("attributes") or [] for k, vals in a.items()}
            gt["category"] = f"Imported > {prob.get('category', 'Product')}"
            gt["short_description"] = title
            gt["specification"] = "; ".join(f"{k}: {v}" for k, v in attrs.items())
            by_id[pid] = gt
            _real_distractors(b, gt, r, attrs, shop_twin=prob.get("category") == "Shop")
    b.background(n_background)
    order = list(range(len(b.products)))
    rng.shuffle(order)
    return Catalogue([b.products[i] for i in order])


def _allocate(items: list[dict], total: float, rng: random.Random, fixed: dict[int, float] | None = None) -> list[float]:
    """Prices inside each item's constraints summing to ``total`` where possible (``fixed`` prices kept)."""
    fixed = fixed or {}
    prices = [fixed.get(i, _feasible_price(r.get("price") or [], rng, target=1.0)) for i, r in enumerate(items)]
    rest = round(total - sum(prices), 2)
    free = [i for i in range(len(items)) if i not in fixed]
    for n, i in enumerate(free):
        if rest <= 0:
            break
        room = _feasible_price(items[i].get("price") or [], rng, target=1e12) - prices[i]
        add = rest if n == len(free) - 1 and room >= rest else min(room, rest)
        prices[i] = round(prices[i] + add, 2)
        rest = round(rest - add, 2)
    return prices


def _merge(product: dict, reward: dict) -> None:
    for o in reward.get("sku_options") or []:
        product["sku_options"][str(len(product["sku_options"]) + 1)] = {str(k): str(v) for k, v in o.items()}
    for a in reward.get("attributes") or []:
        for k, vals in a.items():
            have = product["attributes"].setdefault(k, [])
            have.extend(v for v in (vals if isinstance(vals, list) else [vals]) if v not in have)
    product["service"] = [s for s in SERVICES if s in set(product["service"]) | set(reward.get("service") or [])]
    if reward.get("price") and not price_ok(product["price"], reward["price"]):
        product["price"] = _feasible_price(list(reward["price"]), random.Random(0), target=product["price"])


def _real_distractors(b: _Builder, gt: dict, r: dict, attrs: dict[str, str], *, shop_twin: bool) -> None:
    rng = b.rng

    def clone(**changes: Any) -> None:
        p = {**gt, "sku_options": {k: dict(v) for k, v in gt["sku_options"].items()},
             "attributes": {k: list(v) for k, v in gt["attributes"].items()}, "service": list(gt["service"]),
             "product_id": b.new_id(), "shop_id": rng.choice(b.shops), "sold_count": rng.randrange(0, 9000)}
        p.update(changes)
        b.products.append(p)

    for c in r.get("price") or []:
        for kind, bounds in c.items():
            a, z = (list(bounds) + [None, None])[:2]
            if kind in ("between", "less than") and z is not None:
                clone(price=float(math.ceil(float(z) * 1.5) + 1))
            if kind in ("between", "greater than") and a is not None and float(a) > 2:
                clone(price=float(max(0.5, math.floor(float(a) * 0.5))))
    if r.get("service"):
        clone(service=[s for s in gt["service"] if s not in set(r["service"])])
    if r.get("sku_options"):
        clone(sku_options={"1": {k: "other " + str(v) for o in r["sku_options"] for k, v in o.items()}})
    if attrs:
        clone(attributes={k: ["not " + v] for k, v in attrs.items()})
    if shop_twin:
        clone(shop_id=rng.choice([s for s in b.shops if s != gt["shop_id"]]))


def variant_group_rows(world: World) -> list[dict]:
    """``_truth/problems.jsonl`` rows: problem_id -> variant_group."""
    return [{"problem_id": problem_id_for(p), "variant_group": world.variant_groups[p["problem_id"]],
             **world.variant_info.get(p["problem_id"], {})} for p in world.problems]
