"""A tenth held-out set: ten more small jobs, two of each of the shapes the others are
(file housekeeping, questions about code, edits of several lines, two-step jobs, jobs on
a file the request does not name) but sharing no file, identifier or distinctive word
with any job of tasks.py, more_tasks.py, fresh_tasks.py, third_tasks.py, fourth_tasks.py,
fifth_tasks.py, sixth_tasks.py, seventh_tasks.py, eighth_tasks.py or ninth_tasks.py, nor
with each other. The prompts are phrased as people type them on the first day, in words
the other sets do not use, and the jobs are of kinds the other sets have none of; besides
Python, the workspaces hold plain text, YAML, a justfile, TOML, HTML and JSON.

HELD_OUT_9 became known as leading was developed beside it; these were written blind, by
a helper who read no product code (only ops/eval/, its tests and the README's lines on
the sets) and reported none of their words, as the clean measure. They were only run to
report (`ops/eval/run.py --set held_out_10`) until they became known as leading was
developed beside them, and eleventh_tasks.py was written blind as the clean held-out set
in their place: from then on they are a development set like ninth_tasks.py's. Nothing in
the product names a job, a file or a word of theirs (tests/test_eval.py checks the
product's sources against WORDS_10 and the fixtures' file names).
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
import tomllib
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath
from typing import Any

from ops.eval.tasks import (
    Task,
    Verdict,
    copy_of,
    each_of,
    files_under,
    parsed,
    prints,
    read,
    short,
    sub,
    subbing,
    unchanged,
    verdict,
)

# ---- file housekeeping ----

_CHAPTERS = (
    ("one", "The Rain Begins", "Rain drummed on the hedge all night.",
     "Bramwell curled up tighter and dreamed of beetles."),
    ("two", "Water in the Burrow", "By morning the burrow was a puddle with a hedgehog in it.",
     "Bramwell's best leaves floated past his nose."),
    ("three", "Mossbottom's Raft", "Mossbottom the vole had tied three sticks together with grass.",
     "\"Hop on,\" she said, \"and mind the knots.\""),
    ("four", "Down the Ditch", "The raft spun along the ditch faster than either of them liked.",
     "They passed a drowned wellington and a very surprised frog."),
    ("five", "The Heron's Bargain", "At the weir a tall grey heron blocked the way.",
     "She let them by for a riddle, and Mossbottom knew the answer."),
    ("six", "Home by Moonlight", "The water went down as quickly as it had come up.",
     "They walked back along the hedge by the light of a fat moon."),
    ("seven", "Dry Leaves at Last", "Bramwell made a new nest under the woodpile, high and dry.",
     "Mossbottom stayed for supper, and then for breakfast."),
)
BRAMBLE_CHAPTERS = {f"bramble_saga/chapter_{word}.txt": f"Chapter {word.title()}: {title}\n\n" + "\n".join(body) + "\n"
                    for word, title, *body in _CHAPTERS}
BRAMBLE = {
    **BRAMBLE_CHAPTERS,
    "bramble_saga/illustrations.md": "- chapter three: the raft, seen from above\n"
                                     "- chapter five: the heron at the weir\n",
    "print_shop.txt": "A5 booklet, both sides, two staples in the spine; the shop shuts at five on Saturdays\n",
}
def _bare(line: str) -> str:
    """A line as its words, lower-cased: no Markdown marks, quotes or other punctuation."""
    return " ".join(re.findall(r"[^\W_]+", line.lower()))


_CHAPTER_LINES = tuple(tuple(_bare(line) for line in text.splitlines() if line.strip())
                       for text in BRAMBLE_CHAPTERS.values())
_CHAPTER_WORDS = tuple(word for word, *_ in _CHAPTERS)


def _story_wrong(lines: list[str]) -> str | None:
    """None when `lines` hold the seven chapters, each once, in order, with their lines;
    else what is wrong."""
    for word, chapter in zip(_CHAPTER_WORDS, _CHAPTER_LINES, strict=True):
        count = lines.count(chapter[0])
        if count != 1:
            return f"chapter {word} is in it {count} times"
    at = [lines.index(chapter[0]) for chapter in _CHAPTER_LINES]
    if at != sorted(at):
        order = [word for _, word in sorted(zip(at, _CHAPTER_WORDS, strict=True))]
        return f"the chapters are out of order ({', '.join(order)})"
    for n, (word, chapter) in enumerate(zip(_CHAPTER_WORDS, _CHAPTER_LINES, strict=True)):
        span = iter(lines[at[n] + 1:at[n + 1] if n + 1 < len(at) else len(lines)])
        missing = [line for line in chapter[1:] if line not in span]
        if missing:
            return f"chapter {word} lacks its line {missing[0]!r}"
    return None


def check_bound_story(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, BRAMBLE, "bramble_saga/illustrations.md", "print_shop.txt")
    if changed:
        return False, changed
    best: tuple[int, str] | None = None
    heads = [chapter[0] for chapter in _CHAPTER_LINES]
    for rel in files_under(ws):
        lines = [_bare(line) for line in (read(ws, rel) or "").splitlines() if _bare(line)]
        found = sum(head in lines for head in heads)
        if found < 2:
            continue
        wrong = _story_wrong(lines)
        if wrong is None:
            return True, f"{rel} holds the seven chapters, in order"
        if best is None or found > best[0]:
            best = (found, f"{rel}: {wrong}")
    return False, best[1] if best else "no file holds the chapters together"


_BOOKINGS = (
    ("biscuit_june", "Biscuit", "Mrs Achterberg", 4, "confirmed", ""),
    ("pickle_june", "Pickle", "Dev Malhotra", 2, "cancelled", ""),
    ("waffles_july", "Waffles", "the Fairbairns", 7, "confirmed", "took the slot Pickle's owner cancelled"),
    ("dumpling_july", "Dumpling", "Ines Ferreira", 3, "cancelled", "owner's trip fell through"),
    ("noodle_july", "Noodle", "Gareth Pugh", 5, "confirmed", "needs his own blanket"),
    ("crumpet_august", "Crumpet", "Hana Kobayashi", 10, "cancelled", ""),
    ("marmite_august", "Marmite", "Lou Brennan", 1, "confirmed", ""),
)


def _booking(dog: str, owner: str, nights: int, status: str, note: str) -> str:
    return f"dog: {dog}\nowner: {owner}\nnights: {nights}\nstatus: {status}\n" + (f"note: {note}\n" if note else "")


KENNEL_BOOKINGS = {f"kennel_bookings/{stem}.yml": _booking(dog, owner, nights, status, note)
                   for stem, dog, owner, nights, status, note in _BOOKINGS}
KENNEL = {
    **KENNEL_BOOKINGS,
    "kennel_rates.md": "# Rates\n\nsmall dog 18 a night, large dog 24 a night, walks included\n",
}
_CANCELLED = {rel for rel, text in KENNEL_BOOKINGS.items() if "status: cancelled" in text}


def check_cancelled_aside(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, KENNEL, "kennel_rates.md")
    if changed:
        return False, changed
    everything = files_under(ws)
    for rel, text in KENNEL_BOOKINGS.items():
        held = [where for where in everything if read(ws, where) == text]
        name = PurePosixPath(rel).name
        if not held:
            return False, f"{name} is gone (or was changed)"
        if len(held) > 1:
            return False, f"{name} is in more than one place: {', '.join(held)}"
        where = PurePosixPath(held[0])
        if rel not in _CANCELLED:
            if held[0] != rel:
                return False, f"{name} is not cancelled but was moved to {held[0]}"
            continue
        if not re.fullmatch(r"kennel_bookings/cancell?ed", where.parent.as_posix(), re.I):
            return False, f"the cancelled {name} is at {held[0]}, not in kennel_bookings/cancelled/"
        if where.name != name:
            return False, f"the cancelled {name} was renamed to {where.name}"
    return True, "the cancelled bookings are in kennel_bookings/cancelled/, the rest where they were"


# ---- questions about code ----

LIDO = {
    "justfile": (
        "py := \"python3\"\n\n"
        "default: pages\n\n"
        "pages:\n    {{py}} build_lido.py --out public\n\n"
        "minis:\n    {{py}} shrink.py photos public/minis --width 240\n\n"
        "tidy:\n    rm -rf public\n\n"
        "ship: pages\n    rsync -av public/ lido@tarnside.example:/srv/www/\n"
    ),
    "build_lido.py": (
        "import sys\nfrom pathlib import Path\n\n"
        "out = Path(sys.argv[sys.argv.index('--out') + 1] if '--out' in sys.argv else 'public')\n"
        "out.mkdir(parents=True, exist_ok=True)\n"
        "hours = Path('lido_hours.md').read_text()\n"
        "(out / 'index.html').write_text(f'<h1>Tarnside Lido</h1>\\n<pre>{hours}</pre>\\n')\n"
        "print(f'wrote {out / \"index.html\"}')\n"
    ),
    "shrink.py": (
        "import sys\nfrom pathlib import Path\n\n"
        "src, out = Path(sys.argv[1]), Path(sys.argv[2])\n"
        "width = int(sys.argv[sys.argv.index('--width') + 1]) if '--width' in sys.argv else 320\n"
        "out.mkdir(parents=True, exist_ok=True)\n"
        "for photo in sorted(src.glob('*.jpg')):\n"
        "    (out / photo.name).write_text(f'{photo.name}, {width} px wide\\n')\n"
        "    print(f'made {out / photo.name}')\n"
    ),
    "photos/diving_board.jpg": "(the high board at seven in the morning)\n",
    "photos/deep_end.jpg": "(the deep end, steam coming off the water)\n",
    "lido_hours.md": "Open 6.30 to 19.00 from May to September; the water is kept at 24 degrees\n",
}


def check_which_target(ws: Path, answer: str) -> Verdict:
    if not answer.strip():
        return False, "no final answer"
    by_recipe = re.search(r"\bjust\s+(-\S+\s+)*minis\b", answer)
    by_hand = "shrink.py" in answer and re.search(r"\bphotos\b", answer) and "public/minis" in answer
    if not (by_recipe or by_hand):
        return False, f"the answer does not say just minis: {short(answer)}"
    return verdict(unchanged(ws, LIDO, *LIDO), "the answer says just minis")


MOTHS = {
    "moth_trap.py": (
        "import sys\nimport tomllib\n\nfrom moth_tally import tally_night\n\n"
        "with open('trap_settings.toml', 'rb') as f:\n    settings = tomllib.load(f)\n\n"
        "match sys.argv[1:]:\n"
        "    case ['tally', night]:\n        print(tally_night(night, settings['trap']['bulb']))\n"
        "    case ['bulb']:\n        print(settings['trap']['bulb'])\n"
        "    case _:\n        print('usage: moth_trap.py tally NIGHT | bulb')\n"
    ),
    "moth_tally.py": (
        "CATCHES = {\n"
        "    '0612': ['Elephant Hawk-moth', 'Buff-tip', 'Heart and Dart'],\n"
        "    '0613': ['Buff-tip', 'Large Yellow Underwing'],\n"
        "}\n\n\n"
        "def tally_night(night, bulb):\n"
        "    name = night.removeprefix('night-')\n"
        "    if (caught := CATCHES.get(name)) is None:\n"
        "        return f'no catch logged for {name}'\n"
        "    return f'{name} under the {bulb} bulb: {len(caught)} species ({\", \".join(caught)})'\n"
    ),
    "trap_settings.toml": "[trap]\nbulb = \"actinic\"\ngarden = \"back lawn, by the compost\"\n",
    "moth_log.md": "Warm still nights are best. Empty the trap before the robins find it.\n",
}
_NOT_311 = re.compile(r"\bnot\s+(on\s+|with\s+|even\s+)?(python\s*)?3\.11(?!\d)|"
                      r"3\.11(?!\d)\s*(\(\w+\)\s*)?(is\s+not|isn't|is\s+too\s+old|won't\s+be\s+enough|"
                      r"is\s+not\s+enough|isn't\s+enough)", re.I)


def check_min_python(ws: Path, answer: str) -> Verdict:
    if not answer.strip():
        return False, "no final answer"
    if not re.search(r"(?<![\d.])3\.11(?!\d)", answer):
        return False, f"the answer does not say Python 3.11: {short(answer)}"
    if _NOT_311.search(answer):
        return False, f"the answer says 3.11 is not enough: {short(answer)}"
    return verdict(unchanged(ws, MOTHS, *MOTHS), "the answer says Python 3.11 is needed")


# ---- edits of several lines ----

_PHOTOS = (
    ("img/moat_keep.jpg", "First prize: a four-tower keep with a moat that held water, by the Oduya family"),
    ("img/sand_dragon.jpg", "Second prize: a dragon twenty feet long, its scales made of cockle shells"),
    ("img/under_fives.jpg", "Under-fives winner: a turtle with seaweed hair, by Rosa, aged four"),
    ("img/tide_coming.jpg", "Half past four: the tide takes the last of the turrets"),
    ("img/judges_table.jpg", "The judges, with buckets, flags and a great deal of ice cream"),
)
_FIGURE = "  <figure>\n    <img src=\"{src}\" width=\"600\">\n    <figcaption>{caption}</figcaption>\n  </figure>\n"
SANDCASTLE = {
    "sandcastle_gallery.html": (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n  <meta charset=\"utf-8\">\n"
        "  <title>Gullhaven sandcastle contest 2024</title>\n</head>\n<body>\n"
        "  <header><img src=\"img/club_badge.png\" alt=\"Gullhaven Beach Club badge\" width=\"80\"></header>\n"
        "  <h1>Sandcastle contest 2024</h1>\n"
        "  <p>Thanks to everyone who came down to Gullhaven beach on the hottest day of August.</p>\n"
        + "".join(_FIGURE.format(src=src, caption=caption) for src, caption in _PHOTOS)
        + "  <p>See you all next summer!</p>\n</body>\n</html>\n"
    ),
    "contest_rules.txt": "Sand, water and shells only. No buckets bigger than ten litres. Judging at four.\n",
}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
_GENERIC_ALT = {"image", "photo", "picture", "img", "alt", "alt text", "photograph", "sandcastle", "a photo",
                "an image", "a picture", "gallery image", "photo of a sandcastle", "a sandcastle"}


class _Page(HTMLParser):
    """A page read as its tags (the alt attributes of its images left out) and words, and
    its images' attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tokens: list[tuple[Any, ...]] = []
        self.images: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.images.append(dict(attrs))
        kept = tuple(sorted((k, v or "") for k, v in attrs if not (tag == "img" and k == "alt")))
        self.tokens.append(("<", tag, kept))

    def handle_endtag(self, tag: str) -> None:
        if tag not in _VOID:
            self.tokens.append(("</", tag))

    def handle_data(self, data: str) -> None:
        words = " ".join(data.split())
        if not words:
            return
        if self.tokens and self.tokens[-1][0] == "text":
            self.tokens[-1] = ("text", f"{self.tokens[-1][1]} {words}")
        else:
            self.tokens.append(("text", words))


def _page(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    page.close()
    return page


def check_alt_text(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, SANDCASTLE, "contest_rules.txt")
    if changed:
        return False, changed
    text = read(ws, "sandcastle_gallery.html")
    if text is None:
        return False, "sandcastle_gallery.html is gone"
    page, was = _page(text), _page(SANDCASTLE["sandcastle_gallery.html"])
    if page.tokens != was.tokens:
        diff = next((f"{short(str(a))} became {short(str(b))}" for a, b in zip(was.tokens, page.tokens, strict=False)
                     if a != b), "the page is shorter or longer")
        return False, f"sandcastle_gallery.html changed beyond its alt text: {diff}"
    alts: dict[str, str] = {}
    for image in page.images:
        src = image.get("src") or ""
        if src not in dict(_PHOTOS):
            continue
        alt = " ".join((image.get("alt") or "").split())
        stem = PurePosixPath(src).stem
        if not alt:
            return False, f"{src} has no alt text"
        named = {src, PurePosixPath(src).name, stem, stem.replace("_", " "), stem.replace("_", "-")}
        if alt.lower().strip(".") in _GENERIC_ALT or alt.lower() in {name.lower() for name in named}:
            return False, f"{src}'s alt text says nothing about the picture: {alt!r}"
        if alt.lower() in (a.lower() for a in alts.values()):
            return False, f"{src} has the same alt text as another picture: {alt!r}"
        alts[src] = alt
    return True, "each photo has an alt text of its own, and the page is otherwise as it was"


_BOTHY_PARAGRAPHS = (
    "The Bothy Code",
    "Respect other users. Bothies are open to everyone and nobody can book them, so be ready to share the space "
    "and the fire with whoever turns up, however late they arrive and however muddy their boots are. Keep the "
    "noise down after dark, because some people come up here for the quiet and have walked a long way to find it.",
    "Respect the bothy. Tell the maintenance organiser about any damage you find, and about anything that has run "
    "out, such as the spade or the saw. Carry out all your rubbish, including the food you did not finish, and "
    "never leave tins or bottles on the shelves for the next visitor: mice will find them long before a person does.",
    "Respect the surroundings. If there is no toilet, bury human waste well away from the building and at least "
    "two hundred metres from the water supply. Do not cut live wood for the fire; burn only the fuel you have "
    "carried in, or dead wood lying on the ground, and use it sparingly.",
    "Respect agreements with the estate. Please keep to any restrictions on use during the stalking and lambing "
    "seasons, and park only where the estate asks you to, never in passing places or in front of gates that are "
    "used every day.",
    "Respect the restriction on numbers. Because of the limited space, groups of six or more should not use a "
    "bothy, nor should it be used for commercial purposes or as a base for long stays; three nights in a row is "
    "the most anyone should stay.",
)
BOTHY = {
    "bothy_code.txt": "\n\n".join(_BOTHY_PARAGRAPHS) + "\n",
    "bothy_locations.txt": "Glenpean: NM 967 894, the burn can be uncrossable in spate\n",
}
_WRAP = 80
_SHORTEST = 60  # a line of a paragraph (but its last) shorter than this is wrapped too early


def check_rewrap(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, BOTHY, "bothy_locations.txt")
    if changed:
        return False, changed
    text = read(ws, "bothy_code.txt")
    if text is None:
        return False, "bothy_code.txt is gone"
    paragraphs = re.split(r"\n[ \t]*\n", text.strip("\n"))
    if len(paragraphs) != len(_BOTHY_PARAGRAPHS):
        return False, f"bothy_code.txt has {len(paragraphs)} paragraphs, not {len(_BOTHY_PARAGRAPHS)}"
    for n, (now, was) in enumerate(zip(paragraphs, _BOTHY_PARAGRAPHS, strict=True), 1):
        if now.split() != was.split():
            words = [w for w in now.split() if w not in was.split()] or [w for w in was.split() if w not in now.split()]
            return False, f"paragraph {n}'s words changed ({short(' '.join(words[:3])) or 'their order'})"
        lines = [line.rstrip() for line in now.splitlines()]
        long = [line for line in lines if len(line) > _WRAP]
        if long:
            return False, f"paragraph {n} has a line of {len(long[0])} characters: {short(long[0])}"
        early = [line for line in lines[:-1] if len(line) < _SHORTEST]
        if early:
            return False, f"paragraph {n} is broken into short lines, like {early[0]!r}"
    return True, f"bothy_code.txt is wrapped at {_WRAP} characters, its words and paragraphs as they were"


# ---- two-step jobs ----

_PRICES = (("half hour", 23), ("hour", 41), ("chauffeured hour", 57), ("whole afternoon", 96))
PUNTS = {
    "punt_hire.py": (
        "RATES = {\n" + "".join(f"    '{what}': {pounds},\n" for what, pounds in _PRICES) + "}\n\n"
        "print('Punt hire at Silverweir Quay')\n"
        "for what, pounds in RATES.items():\n"
        "    print(f'  {what}: £{pounds}')\n"
        "print('Deposit: one photo ID per punt')\n"
    ),
    "river_notes.md": "Low bridges after the mill: sit down. Poles are not to be left stuck in the mud.\n",
}


def _price_list(prices: tuple[tuple[str, int], ...] = _PRICES) -> str:
    return "\n".join(["Punt hire at Silverweir Quay", *(f"  {what}: £{pounds}" for what, pounds in prices),
                      "Deposit: one photo ID per punt"])


def check_prices_out(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, PUNTS, "river_notes.md")
    if changed:
        return False, changed
    toml = read(ws, "punt_prices.toml")
    if toml is None:
        return False, "there is no punt_prices.toml"
    try:
        tomllib.loads(toml)
    except tomllib.TOMLDecodeError as exc:
        return False, f"punt_prices.toml is not valid TOML ({exc})"
    tree, why = parsed(ws, "punt_hire.py")
    if tree is None:
        return False, why
    prices = {pounds for _, pounds in _PRICES}
    kept = [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and (
        (isinstance(node.value, int | float) and not isinstance(node.value, bool) and node.value in prices)
        or (isinstance(node.value, str) and re.search(r"(?<!\d)(23|41|57|96)(?!\d)", node.value)))]
    if kept:
        return False, f"punt_hire.py still holds the prices itself ({kept[0]!r})"
    wrong = prints(ws, ["punt_hire.py"], _price_list())
    if wrong:
        return False, wrong
    with copy_of(ws) as copy:
        moved, n = re.subn(r"(?<![\w.])41(?![\w.])", "44", toml)
        if n != 1:
            return False, f"punt_prices.toml holds 41 {n} times, not once"
        (copy / "punt_prices.toml").write_text(moved)
        dearer = tuple((what, 44 if pounds == 41 else pounds) for what, pounds in _PRICES)
        wrong = prints(copy, ["punt_hire.py"], _price_list(dearer))
    if wrong:
        return False, f"with the hour at 44 in punt_prices.toml: {wrong}"
    return True, "the prices are in punt_prices.toml, and punt_hire.py prints them from there"


_LANGS = {
    "en": {"welcome": "Welcome to Frostmere Ice Rink", "skates": "Skate hire is at the kiosk by the doors",
           "resurface": "The ice is resurfaced on the hour, every hour"},
    "fr": {"welcome": "Bienvenue à la patinoire de Frostmere",
           "skates": "Location de patins au kiosque près des portes",
           "resurface": "La glace est refaite toutes les heures, à l'heure pile"},
    "es": {"welcome": "Bienvenidos a la pista de hielo de Frostmere",
           "skates": "Alquiler de patines en el quiosco junto a las puertas",
           "resurface": "El hielo se repasa cada hora en punto"},
}
RINK = {
    "rink_board.py": (
        "import json\nimport sys\nfrom pathlib import Path\n\n"
        "ORDER = ['welcome', 'skates', 'resurface']\n\n"
        "lang = sys.argv[1] if len(sys.argv) > 1 else 'en'\n"
        "messages = json.loads((Path(__file__).parent / 'lang' / f'board_{lang}.json').read_text(encoding='utf-8'))\n"
        "for key in ORDER:\n    print(messages[key])\n"
    ),
    **{f"lang/board_{lang}.json": json.dumps(texts, ensure_ascii=False, indent=2) + "\n"
       for lang, texts in _LANGS.items()},
    "rink_hours.txt": "Public skating 10 to 12 and 14 to 17; disco night on Fridays\n",
}
_NEW_MESSAGE = "last skate in 10 minutes"


def check_new_message(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, RINK, "rink_hours.txt")
    if changed:
        return False, changed
    new: dict[str, tuple[str, str]] = {}
    for lang, texts in _LANGS.items():
        try:
            data = json.loads(read(ws, f"lang/board_{lang}.json") or "")
        except json.JSONDecodeError as exc:
            return False, f"lang/board_{lang}.json is gone or no longer valid JSON ({exc.msg})"
        if not isinstance(data, dict) or any(data.get(k) != v for k, v in texts.items()):
            return False, f"lang/board_{lang}.json's messages changed"
        added = [k for k in data if k not in texts]
        if len(added) != 1 or not isinstance(data[added[0]], str) or not data[added[0]].strip():
            return False, f"lang/board_{lang}.json has {len(added)} new messages, not one"
        new[lang] = (added[0], data[added[0]].strip())
    if len({key for key, _ in new.values()}) != 1:
        return False, f"the new message has a different name in each language: {sorted(k for k, _ in new.values())}"
    english = new["en"][1]
    if english.lower().rstrip(".!") != _NEW_MESSAGE:
        return False, f"the English message is {english!r}"
    for lang in ("fr", "es"):
        said = new[lang][1]
        if said.lower() == english.lower():
            return False, f"lang/board_{lang}.json's new message is not a translation: {said!r}"
    key = new["en"][0]
    with copy_of(ws) as copy:
        for lang, texts in _LANGS.items():
            data = json.loads((copy / f"lang/board_{lang}.json").read_text(encoding="utf-8"))
            for marked in (new[lang][1], f"[{lang} marker]"):
                (copy / f"lang/board_{lang}.json").write_text(json.dumps({**data, key: marked}, ensure_ascii=False))
                wrong = prints(copy, ["rink_board.py", lang], "\n".join([*texts.values(), marked]))
                if wrong and marked != new[lang][1]:
                    return False, f"with the message changed in lang/board_{lang}.json: {wrong}"
                if wrong:
                    return False, wrong
    return True, "the board ends with the new message in each language, read from lang/"


# ---- jobs on a file the request does not name ----

_TODAY = "2025-03-14"
_HOLDS = (("Gorilla suit", "Priya Raman", "2025-02-20"), ("Victorian ballgown", "Tom Ashdown", "2025-02-28"),
          ("Pirate captain", "Ellis Moor", "2025-03-10"), ("Astronaut", "Jun Park", "2025-03-21"),
          ("Tudor doublet", "Maeve Kinsella", "2025-03-02"), ("Chicken", "Oskar Lind", "2025-03-14"),
          ("Dalek", "Sam Whitlock", "2025-04-01"))


def _holds(holds: tuple[tuple[str, str, str], ...]) -> str:
    return "".join(f"{costume} | {who} | {until}\n" for costume, who, until in holds)


def _kept(holds: tuple[tuple[str, str, str], ...]) -> str:
    left = [(c, w, u) for c, w, u in holds if u >= _TODAY]
    return "\n".join([*(f"{c}: {w} until {u}" for c, w, u in left), f"{len(left)} holds kept"])


WARDROBE = {
    "nightly_tidy.py": (
        "from wardrobe.holds import load_holds, purge_expired\n\n"
        f"TODAY = '{_TODAY}'\n\n"
        "holds = purge_expired(load_holds('holds.txt'), TODAY)\n"
        "for hold in holds:\n"
        "    print(f\"{hold['costume']}: {hold['who']} until {hold['until']}\")\n"
        "print(f'{len(holds)} holds kept')\n"
    ),
    "wardrobe/__init__.py": "",
    "wardrobe/holds.py": (
        "def load_holds(path):\n"
        "    holds = []\n"
        "    with open(path) as f:\n"
        "        for line in f:\n"
        "            if line.strip():\n"
        "                costume, who, until = (part.strip() for part in line.split('|'))\n"
        "                holds.append({'costume': costume, 'who': who, 'until': until})\n"
        "    return holds\n\n\n"
        "def purge_expired(holds, today):\n"
        "    \"\"\"Drops every hold whose last day is before today.\"\"\"\n"
        "    for hold in holds:\n"
        "        if hold['until'] < today:\n"
        "            holds.remove(hold)\n"
        "    return holds\n"
    ),
    "wardrobe/sizes.md": "Adult costumes come in S, M and XL; the Dalek fits anyone under six feet.\n",
    "holds.txt": _holds(_HOLDS),
}
# Other holds, written in a copy: a long run of old ones, one ending today, one yesterday.
_OTHER_HOLDS = (("Yeti", "A. Byrne", "2025-01-02"), ("Mermaid tail", "C. Dunne", "2025-01-09"),
                ("Knight", "E. Foy", "2025-02-01"), ("Pharaoh", "G. Hale", "2025-02-11"),
                ("Scarecrow", "I. Jones", "2025-03-01"), ("Robot", "K. Lowe", "2025-03-14"),
                ("Witch", "M. Nash", "2025-03-13"), ("Viking", "O. Pike", "2025-05-30"),
                ("Clown", "Q. Ross", "2025-03-12"))


def check_skipped_expired(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, WARDROBE, "holds.txt", "wardrobe/sizes.md")
    if changed:
        return False, changed
    wrong = prints(ws, ["nightly_tidy.py"], _kept(_HOLDS))
    if wrong:
        return False, wrong
    with copy_of(ws) as copy:
        (copy / "holds.txt").write_text(_holds(_OTHER_HOLDS))
        wrong = prints(copy, ["nightly_tidy.py"], _kept(_OTHER_HOLDS))
    if wrong:
        return False, f"with other holds: {wrong}"
    return True, "every hold that has run out is dropped, the others kept in order"


_DANCERS = (("Zoë Whitfield", "caller"), ("Siân Pritchard", "fiddle"), ("Björn Aalto", "dancer"),
            ("José Carvalho", "dancer"), ("Ana María Ruiz", "dancer"), ("Callum Reid", "bodhrán"))


def _dancers(dancers: tuple[tuple[str, str], ...]) -> str:
    return "".join(f"{name}, {part}\n" for name, part in dancers)


def _badges(dancers: tuple[tuple[str, str], ...]) -> str:
    return "\n".join(f"** {name} ** ({part})" for name, part in dancers)


CEILIDH = {
    "ceilidh_badges.py": (
        "from badgework.roster import dancers\n\n"
        "for name, part in dancers('dancers.txt'):\n"
        "    print(f'** {name} ** ({part})')\n"
    ),
    "badgework/__init__.py": "",
    "badgework/roster.py": (
        "def dancers(path):\n"
        "    with open(path, encoding='latin-1') as f:\n"
        "        return [line.strip().split(', ') for line in f if line.strip()]\n"
    ),
    "dancers.txt": _dancers(_DANCERS),
    "set_list.md": "Strip the Willow, Gay Gordons, Dashing White Sergeant, then the Orcadian Strip the Willow\n",
}
# Other dancers, written in a copy, with letters beyond the first ones' accents.
_OTHER_DANCERS = (("Łucja Nowak", "dancer"), ("Nguyễn Ngọc Anh", "caller"), ("Antonín Dvořák", "fiddle"),
                  ("Søren Ødegård", "piper"))


def check_garbled_names(ws: Path, answer: str) -> Verdict:
    if (ws / "dancers.txt").is_file() and (ws / "dancers.txt").read_bytes() != CEILIDH["dancers.txt"].encode():
        return False, "dancers.txt was changed and should not have been"
    changed = unchanged(ws, CEILIDH, "dancers.txt", "set_list.md")
    if changed:
        return False, changed
    wrong = prints(ws, ["ceilidh_badges.py"], _badges(_DANCERS))
    if wrong:
        return False, wrong
    with copy_of(ws) as copy:
        (copy / "dancers.txt").write_text(_dancers(_OTHER_DANCERS), encoding="utf-8")
        wrong = prints(copy, ["ceilidh_badges.py"], _badges(_OTHER_DANCERS))
    if wrong:
        return False, f"with other names: {wrong}"
    return True, "the badges show every name as dancers.txt spells it"


HELD_OUT_10: tuple[Task, ...] = (
    Task("bound_story", BRAMBLE, "can you put all the bramble chapters together into one file? i want to print it "
         "for my niece, they need to be in the right order", check_bound_story),
    Task("cancelled_aside", KENNEL, "move the cancelled bookings into a cancelled folder inside kennel_bookings pls, "
         "leave the rest where they are", check_cancelled_aside),
    Task("which_target", LIDO, "i've put some new pics in photos/ - how do i get the small gallery versions of them "
         "made? what do i type", check_which_target),
    Task("min_python", MOTHS, "the old laptop in the shed only has python 3.9 on it. will the moth trap stuff run on "
         "that? if not what version do i need", check_min_python),
    Task("alt_text", SANDCASTLE, "our accessibility checker complains the photos on the sandcastle page have no alt "
         "text. could you add proper descriptions", check_alt_text),
    Task("rewrap", BOTHY, "bothy_code.txt has every paragraph on one massive line. can you wrap it at 80 characters "
         "so it reads ok in a terminal", check_rewrap),
    Task("prices_out", PUNTS, "i want to be able to change the punt prices without editing python. move them into a "
         "punt_prices.toml and make punt_hire.py read them from there", check_prices_out),
    Task("new_message", RINK, "can the rink board show 'Last skate in 10 minutes' at the end as well? in every "
         "language it does, not only english", check_new_message),
    Task("skipped_expired", WARDROBE, "the nightly tidy-up is supposed to clear out every costume hold that's run "
         "out, but afterwards there are still holds from february on the list", check_skipped_expired),
    Task("garbled_names", CEILIDH, "the name badges have gone weird, Zoë comes out as ZoÃ« and Siân as SiÃ¢n. can you "
         "sort it out?", check_garbled_names),
)

# The words that make each job itself: the product's sources must not hold any of them as a
# word (tests/test_eval.py), nor may any other job's prompt or fixture.
WORDS_10: dict[str, tuple[str, ...]] = {
    "bound_story": ("bramble_saga", "Bramwell", "Mossbottom", "print_shop", "hedgehog"),
    "cancelled_aside": ("kennel_bookings", "kennel_rates", "Marmite", "Crumpet", "Achterberg"),
    "which_target": ("lido", "build_lido", "minis", "Tarnside", "rsync"),
    "min_python": ("moth_trap", "moth_tally", "actinic", "trap_settings", "Buff-tip"),
    "alt_text": ("sandcastle_gallery", "Gullhaven", "Oduya", "cockle", "turrets"),
    "rewrap": ("bothy_code", "bothy", "bothy_locations", "lambing", "Glenpean"),
    "prices_out": ("punt_hire", "punt_prices", "Silverweir", "chauffeured", "punt"),
    "new_message": ("rink_board", "Frostmere", "patinoire", "patines", "resurfaced"),
    "skipped_expired": ("nightly_tidy", "purge_expired", "load_holds", "Dalek", "doublet"),
    "garbled_names": ("ceilidh_badges", "badgework", "Siân", "bodhrán", "Pritchard"),
}


# ---- what right and nearly right runs do ----


def _bind(order: tuple[int, ...] = tuple(range(7)), into: str = "bramwell_and_the_flood.txt",
          drop: bool = False, heads: bool = True) -> Callable[[Path], None]:
    """The chapters numbered in `order` (from 0) written one after another into `into`
    (without their headings unless `heads`); the chapter files deleted with `drop`."""
    def change(ws: Path) -> None:
        texts = list(BRAMBLE_CHAPTERS.values())
        parts = [texts[n] if heads else texts[n].split("\n", 2)[2] for n in order]
        target = ws / into
        target.write_text((target.read_text() if target.exists() else "") + "\n".join(parts))
        if drop:
            for rel in BRAMBLE_CHAPTERS:
                (ws / rel).unlink()
    return change


def _move(folder: str = "kennel_bookings/cancelled", which: Callable[[str], bool] = lambda rel: rel in _CANCELLED,
          copy: bool = False) -> Callable[[Path], None]:
    """The bookings `which` picks moved (or copied) into `folder`."""
    def change(ws: Path) -> None:
        (ws / folder).mkdir(parents=True, exist_ok=True)
        for rel in KENNEL_BOOKINGS:
            if which(rel):
                target = ws / folder / PurePosixPath(rel).name
                target.write_text((ws / rel).read_text())
                if not copy:
                    (ws / rel).unlink()
    return change


_GOOD_ALTS = ("A four-tower sand keep ringed by a moat full of water", "A long sand dragon with cockle-shell scales",
              "A small sand turtle with seaweed for hair", "The sea washing over the last sand turrets",
              "Three judges at a table with buckets, flags and ice creams")


def _alts(alts: tuple[str | None, ...] = _GOOD_ALTS, attr: str = "alt", width: bool = True) -> Callable[[Path], None]:
    """`attr` given each photo (none where None); their widths dropped unless `width`."""
    def change(ws: Path) -> None:
        for (src, _), alt in zip(_PHOTOS, alts, strict=True):
            if alt is not None:
                sub(ws, "sandcastle_gallery.html", f"<img src=\"{src}\" width=\"600\">",
                    f"<img src=\"{src}\" {attr}=\"{alt}\"" + (" width=\"600\">" if width else ">"))
    return change


def _wrap(width: int = _WRAP, upto: int = len(_BOTHY_PARAGRAPHS), join: str = "\n\n",
          words: Callable[[str], str] = lambda text: text) -> Callable[[Path], None]:
    """bothy_code.txt's first `upto` paragraphs wrapped at `width`, joined with `join`,
    their text passed through `words` first."""
    def change(ws: Path) -> None:
        done = [textwrap.fill(words(p), width) if n < upto else p for n, p in enumerate(_BOTHY_PARAGRAPHS)]
        (ws / "bothy_code.txt").write_text(join.join(done) + "\n")
    return change


_RATES_CODE = "RATES = {\n" + "".join(f"    '{what}': {pounds},\n" for what, pounds in _PRICES) + "}\n"
_READ_TOML = "import tomllib\n\nwith open('punt_prices.toml', 'rb') as f:\n    RATES = tomllib.load(f)\n"


def _toml(name: str = "punt_prices.toml", body: str | None = None,
          code: str | None = _READ_TOML) -> Callable[[Path], None]:
    """The prices written to `name` (as `body`, when given), and punt_hire.py's RATES made
    `code` (left as it was when None)."""
    def change(ws: Path) -> None:
        (ws / name).write_text(body if body is not None else "".join(f"\"{w}\" = {p}\n" for w, p in _PRICES))
        if code is not None:
            sub(ws, "punt_hire.py", _RATES_CODE, code)
    return change


_TRANSLATED = {"en": "Last skate in 10 minutes", "fr": "Dernier tour de patinage dans 10 minutes",
               "es": "Último turno de patinaje en 10 minutos"}


_LAST_ORDER = "ORDER = ['welcome', 'skates', 'resurface', 'last_skate']\n"


def _announce(texts: dict[str, str] = _TRANSLATED, key: str | dict[str, str] = "last_skate",
              order: str | None = _LAST_ORDER) -> Callable[[Path], None]:
    """Each of `texts` added to its language's file under `key` (or that language's key);
    the board's ORDER made `order` (left as it was when None)."""
    def change(ws: Path) -> None:
        for lang, text in texts.items():
            data = json.loads((ws / f"lang/board_{lang}.json").read_text(encoding="utf-8"))
            data[key if isinstance(key, str) else key[lang]] = text
            (ws / f"lang/board_{lang}.json").write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
        if order is not None:
            sub(ws, "rink_board.py", "ORDER = ['welcome', 'skates', 'resurface']\n", order)
    return change


_PURGE_LOOP = ("    for hold in holds:\n        if hold['until'] < today:\n            holds.remove(hold)\n"
               "    return holds\n")


def _purge(body: str) -> Callable[[Path], None]:
    return subbing("wardrobe/holds.py", _PURGE_LOOP, body)


_OPEN_LATIN = "    with open(path, encoding='latin-1') as f:\n"


# What a right run of each job does to its workspace, and its answer (tests/test_eval.py
# checks every checker passes it); kept here with the jobs, as SOLVED_HELD_OUT_9 is.
SOLVED_HELD_OUT_10: dict[str, tuple[Any, str]] = {
    "bound_story": (_bind(), "All seven chapters, one to seven, are in bramwell_and_the_flood.txt."),
    "cancelled_aside": (_move(), "Moved pickle_june.yml, dumpling_july.yml and crumpet_august.yml into "
                                 "kennel_bookings/cancelled/."),
    "which_target": (None, "Run `just minis`: it runs shrink.py on photos/ and writes 240 px versions to "
                           "public/minis."),
    "min_python": (None, "No: moth_trap.py imports tomllib, which is new in Python 3.11 (and uses match, from "
                         "3.10), so you need Python 3.11 or newer."),
    "alt_text": (_alts(), "Added alt text describing each of the five photos."),
    "rewrap": (_wrap(), "Wrapped every paragraph of bothy_code.txt at 80 characters."),
    "prices_out": (_toml(), "The prices are in punt_prices.toml now and punt_hire.py reads them with tomllib."),
    "new_message": (_announce(), "Added last_skate to board_en.json, board_fr.json and board_es.json, and to the "
                                 "board's ORDER."),
    "skipped_expired": (_purge("    return [hold for hold in holds if hold['until'] >= today]\n"),
                        "purge_expired removed items from the list it was looping over, so it skipped the one after "
                        "each removal; it builds a new list now."),
    "garbled_names": (subbing("badgework/roster.py", _OPEN_LATIN, "    with open(path, encoding='utf-8') as f:\n"),
                      "badgework/roster.py read dancers.txt as Latin-1; it is UTF-8, and is read as that now."),
}


# Runs that are nearly right, each of which its checker must refuse: (job, change, answer).
NEAR_MISSES_10: tuple[tuple[str, Any, str], ...] = (
    ("bound_story", _bind(order=tuple(sorted(range(7), key=lambda n: _CHAPTER_WORDS[n]))),
     "Joined the chapter files (cat bramble_saga/chapter_*.txt)."),
    ("bound_story", _bind(order=tuple(range(6))), "Joined them."),
    ("bound_story", _bind(order=(0, 1, 2, 2, 3, 4, 5, 6)), "Joined them."),
    ("bound_story", _bind(order=tuple(range(6, -1, -1))), "Joined them."),
    ("bound_story", _bind(heads=False, drop=True), "Joined them, without the headings."),
    ("bound_story", _bind(into="print_shop.txt"), "Added the story to print_shop.txt."),
    ("bound_story", each_of(_bind(), subbing("bramwell_and_the_flood.txt", "a very surprised frog",
                                             "a surprised frog")), "Joined them."),
    ("bound_story", each_of(_bind(order=(0, 1, 2, 3)), _bind(order=(4, 5, 6), into="part_two.txt")),
     "Joined them in two halves."),
    ("cancelled_aside", _move(which=lambda rel: "cancelled" in KENNEL_BOOKINGS[rel]),
     "Moved everything that mentions cancelled."),
    ("cancelled_aside", _move(copy=True), "Copied the cancelled ones."),
    ("cancelled_aside", _move(folder="cancelled"), "Moved them into cancelled/."),
    ("cancelled_aside", lambda ws: [(ws / rel).unlink() for rel in _CANCELLED], "Deleted the cancelled ones."),
    ("cancelled_aside", _move(which=lambda rel: rel in _CANCELLED and "crumpet" not in rel), "Moved them."),
    ("cancelled_aside", each_of(_move(), _move(folder="kennel_bookings/confirmed",
                                               which=lambda rel: rel not in _CANCELLED)),
     "Moved the cancelled ones, and the rest into confirmed/."),
    ("cancelled_aside", each_of(_move(), subbing("kennel_bookings/cancelled/pickle_june.yml", "status: cancelled",
                                                 "status: archived")), "Moved them."),
    ("which_target", None, "Just run `just`."),
    ("which_target", None, "Run `just pages`; it rebuilds the site."),
    ("which_target", None, "make minis"),
    ("which_target", None, "Run python3 shrink.py."),
    ("which_target", None, "Type just shrink."),
    ("which_target", None, "Run `just thumbnails`, then `just ship`."),
    ("which_target", None, "python3 build_lido.py --out public"),
    ("min_python", None, "Yes, 3.9 is fine."),
    ("min_python", None, "No, you need Python 3.10, because of the match statement."),
    ("min_python", None, "You need 3.12 for tomllib."),
    ("min_python", None, "Python 3.8 or newer: it uses the walrus operator."),
    ("min_python", None, "Any Python 3 will do."),
    ("min_python", None, "3.11 is not enough: tomllib came in 3.12."),
    ("min_python", lambda ws: sub(ws, "moth_trap.py", "import tomllib\n", "import tomli as tomllib\n"),
     "It needed 3.11 for tomllib; I switched it to tomli so it runs on 3.9."),
    ("alt_text", _alts(alts=(*_GOOD_ALTS[:3], None, None)), "Added alt text."),
    ("alt_text", _alts(alts=("",) * 5), "Added empty alt attributes."),
    ("alt_text", _alts(alts=tuple(PurePosixPath(src).name for src, _ in _PHOTOS)), "Added alt text."),
    ("alt_text", _alts(alts=("photo",) * 5), "Added alt text."),
    ("alt_text", _alts(attr="title"), "Added descriptions."),
    ("alt_text", _alts(width=False), "Added alt text and tidied the tags."),
    ("alt_text", each_of(_alts(), *(subbing("sandcastle_gallery.html", f"    <figcaption>{caption}</figcaption>\n", "")
                                    for _, caption in _PHOTOS)), "Moved the captions into the alt text."),
    ("rewrap", _wrap(width=100), "Wrapped it."),
    ("rewrap", _wrap(upto=2), "Wrapped it."),
    ("rewrap", _wrap(join="\n"), "Wrapped it."),
    ("rewrap", _wrap(width=40), "Wrapped it."),
    ("rewrap", _wrap(words=lambda text: text.replace("mice will find them long before a person does", "mice will "
                                                     "find them")), "Wrapped it."),
    ("rewrap", lambda ws: (ws / "bothy_code.txt").write_text(
        "\n\n".join("\n".join(p.split()) for p in _BOTHY_PARAGRAPHS) + "\n"), "One word a line."),
    ("rewrap", each_of(_wrap(), subbing("bothy_code.txt", "surroundings.", "surround-\nings.")),
     "Wrapped it, hyphenating a long word."),
    ("prices_out", _toml(code=None), "Wrote punt_prices.toml."),
    ("prices_out", _toml(code=_READ_TOML + "RATES = RATES or " + _RATES_CODE.removeprefix("RATES = ")),
     "punt_hire.py reads punt_prices.toml, falling back to the old prices."),
    ("prices_out", _toml(name="punt_prices.json", body=json.dumps(dict(_PRICES)),
                         code="import json\n\nwith open('punt_prices.json') as f:\n    RATES = json.load(f)\n"),
     "Moved them to punt_prices.json."),
    ("prices_out", _toml(name="prices.toml", code=_READ_TOML.replace("punt_prices", "prices")), "Moved them."),
    ("prices_out", _toml(body="".join(f"\"{w}\" = {p}.0\n" for w, p in _PRICES)), "Moved them."),
    ("prices_out", _toml(body="".join(f"{w} = {p}\n" for w, p in _PRICES)), "Moved them."),
    ("prices_out", _toml(body="".join(f"\"{w}\" = {p}\n" for w, p in _PRICES[:3])), "Moved them."),
    ("new_message", _announce(texts={"en": _TRANSLATED["en"]}), "Added it."),
    ("new_message", _announce(texts=dict.fromkeys(_LANGS, _TRANSLATED["en"])), "Added it to every language."),
    ("new_message", _announce(order=None), "Added last_skate to the three files."),
    ("new_message", subbing("rink_board.py", "    print(messages[key])\n",
                            "    print(messages[key])\nprint('Last skate in 10 minutes')\n"), "Added it."),
    ("new_message", _announce(order="ORDER = ['last_skate', 'welcome', 'skates', 'resurface']\n"), "Added it."),
    ("new_message", _announce(key={"en": "last_skate", "fr": "dernier_tour", "es": "ultimo_turno"}), "Added it."),
    ("new_message", each_of(_announce(), subbing("lang/board_es.json", "\"last_skate\"", "\"last_skate\",")),
     "Added it."),
    ("skipped_expired", subbing("nightly_tidy.py", "purge_expired(load_holds('holds.txt'), TODAY)",
                                "purge_expired(purge_expired(load_holds('holds.txt'), TODAY), TODAY)"),
     "It now purges twice."),
    ("skipped_expired", _purge("    return [hold for hold in holds if hold['until'] > today]\n"), "Fixed."),
    ("skipped_expired", lambda ws: (ws / "holds.txt").write_text(_holds(tuple(h for h in _HOLDS if h[2] >= _TODAY))),
     "Took the old holds off holds.txt."),
    ("skipped_expired", _purge("    return sorted((hold for hold in holds if hold['until'] >= today), "
                               "key=lambda hold: hold['until'])\n"), "Fixed, and sorted by date."),
    ("skipped_expired", _purge("    return [hold for hold in holds if not hold['until'].startswith('2025-02')]\n"),
     "It drops February's holds now."),
    ("skipped_expired", _purge("    for hold in holds[1:]:\n        if hold['until'] < today:\n"
                               "            holds.remove(hold)\n    return holds\n"), "Fixed."),
    ("garbled_names", subbing("badgework/roster.py", _OPEN_LATIN, "    with open(path, encoding='cp1252') as f:\n"),
     "Read it as Windows-1252."),
    ("garbled_names", subbing("badgework/roster.py", _OPEN_LATIN,
                              "    with open(path, encoding='ascii', errors='ignore') as f:\n"), "Fixed."),
    ("garbled_names", lambda ws: (ws / "dancers.txt").write_text(_dancers(_DANCERS), encoding="latin-1"),
     "Saved dancers.txt as Latin-1 so it matches."),
    ("garbled_names", subbing("ceilidh_badges.py", "    print(f'** {name} ** ({part})')\n",
                              "    for bad, good in (('Ã«', 'ë'), ('Ã¢', 'â'), ('Ã¶', 'ö'), ('Ã©', 'é'),"
                              " ('Ã\\xad', 'í'), ('Ã¡', 'á')):\n"
                              "        name, part = name.replace(bad, good), part.replace(bad, good)\n"
                              "    print(f'** {name} ** ({part})')\n"), "Patched the broken letters."),
    ("garbled_names", each_of(subbing("badgework/roster.py", "def dancers(path):\n",
                                      "import unicodedata\n\n\ndef dancers(path):\n"),
                              subbing("badgework/roster.py", _OPEN_LATIN + "        return [line.strip()",
                                      "    with open(path, encoding='utf-8') as f:\n        return [unicodedata."
                                      "normalize('NFKD', line.strip()).encode('ascii', 'ignore').decode()")),
     "Plain letters on the badges now."),
    ("garbled_names", subbing("ceilidh_badges.py", "print(f'** {name} ** ({part})')",
                              "print(f'** {name.encode()} ** ({part})')"), "Fixed."),
)
