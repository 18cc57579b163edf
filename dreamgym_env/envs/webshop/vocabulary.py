"""The vocabularies the WebShop catalog and its instructions are generated from.

Seven categories of eight product types each; every type has its own attribute pool, option
groups and price range. Option groups are shared value lists (colors, sizes, flavors ...).
Tests check that no two distinct entries of a list match each other under the tolerant
matcher of :mod:`dreamgym_env.envs.webshop.matching`, so that scoring is unambiguous.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OptionGroup:
    """A group of option values a product offers one of (e.g. its colors)."""

    key: str
    label: str
    """The group's name on item pages (several keys may share a label, e.g. ``size``)."""
    values: tuple[str, ...]
    phrases: tuple[str, ...]
    """Instruction phrases, ``{v}`` standing for the value."""


@dataclass(frozen=True)
class ProductType:
    """A kind of product: its name (which every title contains), attributes and option groups."""

    name: str
    category: str
    attributes: tuple[str, ...]
    groups: tuple[str, ...]
    price: tuple[float, float]
    plural: bool = False


def _group(key: str, label: str, values: str, phrases: str) -> OptionGroup:
    return OptionGroup(key, label, tuple(v.strip() for v in values.split(";")), tuple(phrases.split(";")))


OPTION_GROUPS: dict[str, OptionGroup] = {
    g.key: g
    for g in (
        _group(
            "color",
            "color",
            "black;white;navy blue;royal blue;sky blue;red;burgundy;pink;hot pink;purple;"
            "lavender;olive green;forest green;mint green;yellow;mustard yellow;orange;beige;khaki;"
            "brown;light grey;charcoal;silver;gold;teal;coral;ivory;rose gold",
            "in {v};in {v} color;in the color {v}",
        ),
        _group(
            "clothing_size", "size", "x-small;small;medium;large;x-large;xx-large", "size {v};in size {v}"
        ),
        _group("shoe_size", "size", "6;6.5;7;7.5;8;8.5;9;9.5;10;10.5;11;12", "size {v};in size {v}"),
        _group(
            "waist", "waist", "28 inch;30 inch;32 inch;34 inch;36 inch;38 inch;40 inch", "with a {v} waist"
        ),
        _group("bed_size", "size", "twin;twin xl;full;queen;king;california king", "{v} size;in {v} size"),
        _group(
            "volume", "size", "1.7 fl oz;3.4 fl oz;8 fl oz;12 fl oz;16 fl oz;32 fl oz", "{v};in the {v} size"
        ),
        _group(
            "pack",
            "count",
            "pack of 1;pack of 2;pack of 3;pack of 4;pack of 6;pack of 8;pack of 12;pack of 24",
            "{v};in a {v}",
        ),
        _group("set", "count", "set of 3;set of 5;set of 8;set of 11;set of 15", "{v};in a {v}"),
        _group(
            "flavor",
            "flavor",
            "dark chocolate;peanut butter;salted caramel;vanilla;strawberry;mixed berry;lemon;lime;"
            "mango;coconut;cinnamon;honey;original;sea salt;blueberry;raspberry;watermelon;peppermint;"
            "peach;cherry;hazelnut;mocha;toasted almond;maple",
            "{v} flavor;in {v} flavor;with {v} flavor",
        ),
        _group(
            "scent",
            "scent",
            "lavender;rose;vanilla;eucalyptus;citrus;coconut;ocean breeze;sandalwood;unscented;"
            "jasmine;white tea;cucumber melon;fresh linen",
            "{v} scent;with {v} scent;in the {v} scent",
        ),
        _group("storage", "capacity", "32gb;64gb;128gb;256gb;512gb;1tb", "with {v};{v} capacity"),
        _group("battery", "capacity", "5000mah;10000mah;20000mah;26800mah", "with {v};{v} capacity"),
        _group("bottle", "capacity", "18 oz;24 oz;32 oz;40 oz;64 oz", "{v};that holds {v}"),
        _group("cups", "capacity", "4 cup;8 cup;10 cup;12 cup;14 cup", "{v};with {v} capacity"),
        _group("cable_length", "length", "1 ft;3 ft;6 ft;10 ft;15 ft", "{v} long;{v} in length"),
        _group("leash_length", "length", "4 ft;5 ft;6 ft;8 ft;16 ft", "{v} long;{v} in length"),
        _group("pan_size", "size", "8 inch;10 inch;11 inch;12 inch;14 inch", "{v};{v} size"),
        _group(
            "pillow_size",
            "size",
            "16 x 16 inch;18 x 18 inch;20 x 20 inch;22 x 22 inch;24 x 24 inch",
            "{v};{v} size",
        ),
        _group("curtain_size", "size", "70 x 72 inch;72 x 84 inch;54 x 78 inch;36 x 72 inch", "{v};{v} size"),
        _group("weight", "weight", "5 lb;10 lb;15 lb;20 lb;25 lb;30 lb;40 lb;50 lb", "{v};{v} weight"),
        _group("bag", "size", "4 lb bag;5 lb bag;15 lb bag;24 lb bag;30 lb bag", "{v};in a {v}"),
        _group("net_weight", "size", "8 oz;12 oz;16 oz;24 oz;32 oz;2 lb", "{v};{v} size"),
        _group("thickness", "thickness", "4mm;6mm;8mm;10mm;15mm", "{v} thick;{v} thickness"),
        _group(
            "tent",
            "capacity",
            "1 person;2 person;3 person;4 person;6 person;8 person",
            "for {v};{v} capacity",
        ),
        _group("backpack", "capacity", "20l;30l;40l;50l;65l", "{v};{v} capacity"),
        _group("case_size", "case size", "38mm;40mm;41mm;44mm;45mm;46mm", "{v} case;with a {v} case"),
        _group(
            "model",
            "model",
            "iphone 13;iphone 14;iphone 15;iphone 15 pro;galaxy s23;galaxy s24;pixel 7;pixel 8",
            "for {v};for the {v}",
        ),
        _group("pet_size", "size", "small;medium;large;x-large", "size {v};in size {v}"),
        _group("tank", "tank size", "10 gallon;20 gallon;30 gallon;55 gallon;75 gallon", "for a {v} tank"),
    )
}


def _type(
    name: str, category: str, attributes: str, groups: str, lo: float, hi: float, plural: bool = False
) -> ProductType:
    return ProductType(
        name,
        category,
        tuple(a.strip() for a in attributes.split(";")),
        tuple(groups.split(";")),
        (lo, hi),
        plural,
    )


PRODUCT_TYPES: tuple[ProductType, ...] = (
    # fashion
    _type(
        "men's shirt",
        "fashion",
        "long sleeve;short sleeve;button down;machine washable;wrinkle free;slim fit;"
        "regular fit;moisture wicking;cotton blend;breathable",
        "color;clothing_size",
        14,
        60,
    ),
    _type(
        "women's dress",
        "fashion",
        "sleeveless;v neck;midi length;maxi length;floral print;machine washable;"
        "with pockets;wrap style;stretch fabric;ruffle hem",
        "color;clothing_size",
        18,
        90,
    ),
    _type(
        "men's jeans",
        "fashion",
        "slim fit;straight leg;relaxed fit;stretch denim;distressed;machine washable;"
        "button fly;dark wash;five pocket",
        "color;waist",
        20,
        80,
        True,
    ),
    _type(
        "women's leggings",
        "fashion",
        "high waist;squat proof;tummy control;moisture wicking;four way stretch;"
        "with pockets;full length;capri length;quick drying",
        "color;clothing_size",
        12,
        45,
        True,
    ),
    _type(
        "running shoes",
        "fashion",
        "lightweight;breathable mesh;non slip;arch support;memory foam;wide fit;"
        "waterproof;lace up;slip on;shock absorbing",
        "color;shoe_size",
        30,
        140,
        True,
    ),
    _type(
        "winter jacket",
        "fashion",
        "waterproof;windproof;hooded;insulated;packable;fleece lined;zip pockets;"
        "machine washable;detachable hood",
        "color;clothing_size",
        40,
        220,
    ),
    _type(
        "baseball cap",
        "fashion",
        "adjustable strap;sun protection;breathable;embroidered;quick drying;"
        "unstructured;curved brim;washed cotton",
        "color",
        9,
        35,
    ),
    _type(
        "leather belt",
        "fashion",
        "genuine leather;reversible;adjustable;automatic buckle;gift box;full grain;casual style;dress style",
        "color;waist",
        12,
        55,
    ),
    # beauty
    _type(
        "face moisturizer",
        "beauty",
        "fragrance free;oil free;spf 30;hyaluronic acid;cruelty free;vegan;"
        "for sensitive skin;non comedogenic;anti aging;paraben free",
        "volume",
        8,
        65,
    ),
    _type(
        "shampoo",
        "beauty",
        "sulfate free;paraben free;color safe;moisturizing;anti dandruff;"
        "natural ingredients;vegan;cruelty free;for curly hair;volumizing",
        "scent;volume",
        6,
        40,
    ),
    _type(
        "lipstick",
        "beauty",
        "long lasting;matte finish;cruelty free;vegan;moisturizing;smudge proof;"
        "paraben free;satin finish;high pigment",
        "color",
        6,
        38,
    ),
    _type(
        "hair dryer",
        "beauty",
        "ionic;lightweight;fast drying;low noise;foldable handle;diffuser included;"
        "ceramic;cool shot button;travel friendly",
        "color",
        20,
        160,
    ),
    _type(
        "nail polish",
        "beauty",
        "quick drying;long lasting;chip resistant;non toxic;vegan;gel effect;glossy finish;cruelty free",
        "color;pack",
        5,
        30,
    ),
    _type(
        "body wash",
        "beauty",
        "paraben free;moisturizing;sulfate free;natural ingredients;"
        "for sensitive skin;dermatologist tested;cruelty free;exfoliating",
        "scent;volume",
        5,
        30,
    ),
    _type(
        "eau de parfum",
        "beauty",
        "long lasting;travel size;gift set;alcohol free;cruelty free;vegan;floral notes;woody notes",
        "scent;volume",
        25,
        150,
    ),
    _type(
        "makeup brush set",
        "beauty",
        "synthetic bristles;cruelty free;travel case;vegan;soft bristles;"
        "wooden handles;dense bristles;easy to clean",
        "color;set",
        8,
        50,
    ),
    # electronics
    _type(
        "wireless headphones",
        "electronics",
        "noise cancelling;over ear;foldable;long battery life;"
        "built in microphone;fast charging;water resistant;bluetooth 5.3;hi res audio",
        "color",
        25,
        300,
        True,
    ),
    _type(
        "phone case",
        "electronics",
        "shockproof;slim design;wireless charging compatible;card holder;kickstand;"
        "clear back;drop protection;raised edges",
        "color;model",
        8,
        45,
    ),
    _type(
        "charging cable",
        "electronics",
        "fast charging;braided nylon;data sync;usb c to usb c;usb a to usb c;tangle free;right angle",
        "cable_length;pack",
        6,
        30,
    ),
    _type(
        "portable charger",
        "electronics",
        "fast charging;usb c port;compact;led display;dual output;airline approved;magnetic;solar panel",
        "color;battery",
        15,
        80,
    ),
    _type(
        "bluetooth speaker",
        "electronics",
        "waterproof;portable;long battery life;built in microphone;"
        "deep bass;outdoor;stereo pairing;rgb lights",
        "color",
        20,
        200,
    ),
    _type(
        "smart watch",
        "electronics",
        "heart rate monitor;sleep tracking;waterproof;built in gps;"
        "long battery life;always on display;blood oxygen monitor;voice assistant",
        "color;case_size",
        40,
        400,
    ),
    _type(
        "wireless mouse",
        "electronics",
        "ergonomic;silent click;rechargeable;usb receiver;adjustable dpi;"
        "bluetooth;left handed;vertical design",
        "color",
        10,
        90,
    ),
    _type(
        "memory card",
        "electronics",
        "high speed;waterproof;shockproof;4k video;with adapter;class 10;temperature proof",
        "storage;pack",
        7,
        120,
    ),
    # home
    _type(
        "bed sheet set",
        "home",
        "deep pocket;wrinkle free;machine washable;breathable;soft microfiber;cooling;"
        "hypoallergenic;egyptian cotton;fade resistant",
        "color;bed_size",
        20,
        150,
    ),
    _type(
        "throw pillow cover",
        "home",
        "zipper closure;machine washable;decorative;velvet;linen look;double sided;hidden zipper;boho style",
        "color;pillow_size",
        8,
        40,
    ),
    _type(
        "coffee maker",
        "home",
        "programmable;auto shut off;reusable filter;stainless steel;thermal carafe;"
        "single serve;brew strength control;keep warm plate",
        "color;cups",
        25,
        200,
    ),
    _type(
        "frying pan",
        "home",
        "dishwasher safe;oven safe;induction compatible;pfoa free;stay cool handle;"
        "ceramic coating;with lid;cast iron",
        "pan_size",
        15,
        120,
    ),
    _type(
        "storage basket",
        "home",
        "foldable;with handles;woven;space saving;washable liner;water hyacinth;cotton rope;stackable",
        "color;pack",
        10,
        55,
    ),
    _type(
        "desk lamp",
        "home",
        "dimmable;usb charging port;eye caring;touch control;adjustable arm;"
        "color temperature modes;clamp mount;timer function",
        "color",
        15,
        90,
    ),
    _type(
        "bath towel set",
        "home",
        "quick drying;highly absorbent;machine washable;ring spun cotton;"
        "oversized;hotel quality;lint free;soft touch",
        "color;set",
        18,
        110,
    ),
    _type(
        "shower curtain",
        "home",
        "waterproof;machine washable;mildew resistant;with hooks;weighted hem;"
        "fabric liner;farmhouse style;extra long",
        "color;curtain_size",
        10,
        50,
    ),
    # grocery
    _type(
        "snack bar",
        "grocery",
        "gluten free;high protein;low sugar;non gmo;vegan;keto friendly;kosher;"
        "no artificial flavors;dairy free",
        "flavor;pack",
        6,
        45,
        True,
    ),
    _type(
        "ground coffee",
        "grocery",
        "organic;fair trade;medium roast;dark roast;decaffeinated;kosher;single origin;arabica beans",
        "flavor;net_weight",
        7,
        40,
    ),
    _type(
        "green tea",
        "grocery",
        "organic;caffeine free;individually wrapped;non gmo;loose leaf;kosher;rich in antioxidants",
        "flavor;pack",
        5,
        30,
    ),
    _type(
        "trail mix",
        "grocery",
        "gluten free;non gmo;resealable bag;no added sugar;kosher;high protein;"
        "individually wrapped;roasted nuts",
        "flavor;net_weight",
        6,
        35,
    ),
    _type(
        "olive oil",
        "grocery",
        "cold pressed;organic;non gmo;kosher;extra virgin;glass bottle;single origin",
        "net_weight;pack",
        8,
        60,
    ),
    _type(
        "pasta sauce",
        "grocery",
        "no added sugar;organic;vegan;gluten free;non gmo;low sodium;family size;slow simmered",
        "flavor;pack",
        4,
        35,
    ),
    _type(
        "sparkling water",
        "grocery",
        "zero calorie;no artificial sweeteners;caffeine free;natural flavors;sodium free;bpa free cans",
        "flavor;pack",
        5,
        30,
    ),
    _type(
        "chocolate bar",
        "grocery",
        "fair trade;organic;vegan;dairy free;low sugar;single origin;gluten free;kosher",
        "flavor;pack",
        3,
        40,
        True,
    ),
    # sports
    _type(
        "yoga mat",
        "sports",
        "non slip;extra thick;eco friendly;carrying strap;lightweight;"
        "sweat resistant;alignment lines;latex free",
        "color;thickness",
        15,
        90,
    ),
    _type(
        "water bottle",
        "sports",
        "insulated;bpa free;leak proof;dishwasher safe;wide mouth;straw lid;stainless steel;sweat proof",
        "color;bottle",
        10,
        50,
    ),
    _type(
        "dumbbell set",
        "sports",
        "adjustable;rubber coated;non slip grip;anti roll;cast iron;quick change;with stand",
        "weight",
        25,
        300,
    ),
    _type(
        "camping tent",
        "sports",
        "waterproof;easy setup;lightweight;windproof;rainfly included;double layer;mesh windows;carry bag",
        "color;tent",
        40,
        350,
    ),
    _type(
        "resistance bands",
        "sports",
        "latex free;door anchor;carrying bag;with handles;ankle straps;stackable;heavy duty",
        "color;set",
        10,
        45,
        True,
    ),
    _type(
        "hiking backpack",
        "sports",
        "waterproof;lightweight;rain cover;hydration compatible;padded straps;"
        "hip belt;laptop sleeve;ventilated back",
        "color;backpack",
        25,
        180,
    ),
    _type(
        "cycling gloves",
        "sports",
        "padded palm;breathable;touchscreen compatible;anti slip;half finger;"
        "full finger;shock absorbing;reflective",
        "color;clothing_size",
        9,
        40,
        True,
    ),
    _type(
        "jump rope",
        "sports",
        "adjustable length;ball bearings;tangle free;foam handles;weighted;speed cable;digital counter",
        "color",
        6,
        35,
    ),
    # pets
    _type(
        "dry dog food",
        "pets",
        "grain free;high protein;natural ingredients;no artificial preservatives;"
        "small breed;large breed;puppy formula;senior formula",
        "flavor;bag",
        12,
        90,
    ),
    _type(
        "cat litter",
        "pets",
        "clumping;unscented;low dust;odor control;lightweight;flushable;natural clay;multi cat",
        "bag;pack",
        8,
        45,
    ),
    _type(
        "dog leash",
        "pets",
        "reflective;padded handle;heavy duty;tangle free;retractable;hands free;bungee section",
        "color;leash_length",
        8,
        45,
    ),
    _type(
        "pet bed",
        "pets",
        "orthopedic;machine washable;non slip bottom;waterproof;removable cover;"
        "memory foam;raised edges;self warming",
        "color;pet_size",
        18,
        120,
    ),
    _type(
        "cat toy set",
        "pets",
        "interactive;catnip filled;feather wand;crinkle balls;bell inside;non toxic;tunnel included",
        "set",
        6,
        35,
    ),
    _type(
        "dog chew toy",
        "pets",
        "durable;non toxic;dental care;squeaky;natural rubber;floating;treat dispensing",
        "color;pet_size",
        6,
        30,
    ),
    _type(
        "bird feeder",
        "pets",
        "weather resistant;squirrel proof;easy to clean;hanging;window mount;large capacity;metal roof",
        "color",
        10,
        60,
    ),
    _type(
        "aquarium filter",
        "pets",
        "quiet operation;adjustable flow;easy to clean;submersible;three stage filtration;energy saving",
        "tank",
        10,
        80,
    ),
)

CATEGORIES: tuple[str, ...] = tuple(dict.fromkeys(t.category for t in PRODUCT_TYPES))

BRANDS: dict[str, tuple[str, ...]] = {
    "fashion": (
        "Northfield",
        "Veloura",
        "Stitch & Stone",
        "Harbor Lane",
        "Kestrel",
        "Maple Row",
        "Urbanist",
        "Aldenwear",
        "Coastline",
        "Bramble",
        "Ironbark",
        "Juniper & Co",
    ),
    "beauty": (
        "Lumessa",
        "Petal Theory",
        "Glowhaus",
        "Verdana Botanics",
        "Silkroot",
        "Aurelle",
        "Mira Bloom",
        "Purely Kind",
        "Nectaria",
        "Dew Lab",
        "Opaline",
        "Saffron Skin",
    ),
    "electronics": (
        "Voltrix",
        "Soniq",
        "Arcwave",
        "Nexon",
        "Pulsegear",
        "Kiboto",
        "Ampere One",
        "Zentro",
        "Lumatek",
        "Orbix",
        "Helion",
        "Quantix",
    ),
    "home": (
        "Hearthwell",
        "Casa Nova",
        "Linen & Loom",
        "Oakhurst",
        "Nestly",
        "Brightside",
        "Willow Home",
        "Copperleaf",
        "Stillwater",
        "Homestead Co",
        "Ember & Ash",
        "Tidy Nook",
    ),
    "grocery": (
        "Harvest Moon",
        "Green Acre",
        "Sunny Orchard",
        "Wholesome Pantry",
        "Mountain Bean",
        "Pure Grove",
        "Golden Field",
        "Nature's Table",
        "Little Farm",
        "Crisp & Co",
        "Valley Fresh",
        "Bee Kind",
    ),
    "sports": (
        "Summit Pro",
        "Trailblaze",
        "Apex Motion",
        "Ridgeline",
        "Core Forge",
        "Stridewell",
        "Peak Form",
        "Wildpath",
        "Ironclad Fitness",
        "Aerolite",
        "Basecamp",
        "Tempo Sport",
    ),
    "pets": (
        "Happy Paws",
        "Whisker Co",
        "Barkley",
        "Purrfect Life",
        "Tail Trail",
        "Furlander",
        "Pawsome",
        "Feather & Fin",
        "Good Boy Goods",
        "Meowtopia",
        "Snout & Tail",
        "Kibble Kitchen",
    ),
}

DESCRIPTORS: tuple[str, ...] = (
    "Classic",
    "Premium",
    "Essential",
    "Everyday",
    "Signature",
    "Original",
    "Deluxe",
    "Modern",
    "Heritage",
    "Select",
    "Prime",
    "Elite",
    "Basics",
    "Studio",
    "Urban",
    "Comfort",
    "Advanced",
    "Plus",
    "Series X",
    "Edition 2",
    "Vintage",
    "Lite",
)
"""Title words that are neither attributes nor types, so that titles are not just their goals."""

DESCRIPTION_OPENERS: tuple[str, ...] = (
    "Designed for everyday use, this {type} from {brand} combines quality and value.",
    "The {brand} {type} is made to last, with careful attention to detail.",
    "Meet the {type} that customers keep coming back to: {brand} at its best.",
    "A dependable {type} by {brand}, built for comfort and convenience.",
    "This {brand} {type} brings together thoughtful design and reliable materials.",
    "Upgrade your routine with the {brand} {type}, a favourite in {category}.",
)
DESCRIPTION_MIDDLES: tuple[str, ...] = (
    "It is {a1}, and it is {a2}.",
    "Highlights: {a1} and {a2}.",
    "Shoppers choose it because it is {a1} as well as {a2}.",
    "Expect a product that is {a1} and {a2}.",
)
DESCRIPTION_CLOSERS: tuple[str, ...] = (
    "Backed by a 30-day satisfaction guarantee.",
    "Ships in recyclable packaging.",
    "Check the size and option chart before ordering.",
    "Care instructions are included in the box.",
    "Makes a thoughtful gift.",
)

REVIEW_TEXTS: dict[int, tuple[str, ...]] = {
    5: (
        "Exactly what I was looking for.",
        "Great quality for the price.",
        "Would buy again without hesitation.",
        "Exceeded my expectations.",
        "Perfect, arrived quickly.",
    ),
    4: (
        "Very good, minor issues with packaging.",
        "Solid product, does the job well.",
        "Good value, would recommend.",
        "Nice, though slightly different from the photos.",
    ),
    3: ("It is okay, nothing special.", "Average quality, fair price.", "Works, but I expected more."),
    2: ("Not great, started wearing out quickly.", "Below expectations.", "Runs smaller than described."),
    1: ("Disappointed, would not buy again.", "Did not work as advertised."),
}
REVIEWERS: tuple[str, ...] = (
    "Alex",
    "Sam",
    "Jordan",
    "Taylor",
    "Morgan",
    "Casey",
    "Riley",
    "Jamie",
    "Avery",
    "Quinn",
    "Drew",
    "Robin",
)

INSTRUCTION_OPENERS: tuple[str, ...] = (
    "i need",
    "i want",
    "i'm looking for",
    "i am looking for",
    "find me",
    "looking for",
    "please find",
    "can you find",
    "get me",
    "i would like",
    "search for",
    "help me find",
)
PRICE_PHRASES: tuple[str, ...] = (
    "price lower than {p} dollars",
    "and price lower than {p} dollars",
    "under {p} dollars",
    "priced below {p} dollars",
    "that costs less than {p} dollars",
    "for less than {p} dollars",
)
ATTRIBUTE_JOINERS: tuple[str, ...] = ("that is {a}", "that is {a}", "which is {a}", "with {a} features")
PLURAL_ATTRIBUTE_JOINERS: tuple[str, ...] = ("that are {a}", "which are {a}", "with {a} features")
