"""Skills: folders with a SKILL.md, from three places, and their switches.

A SKILL.md starts with front matter between two `---` lines: a kebab-case `name` equal
to its folder's name, a `description`, an optional `title` (other keys are allowed and
ignored); the instructions follow. The places, a later one replacing an earlier one of
the same name:

    bundled     the release's `skills/` (or --skills-dir)
    user        <data>/skills/<name>/SKILL.md, what a person writes in the app
    workspace   <workspace>/.bmoe/skills/<name>/SKILL.md (inside the workspace only)

A file that does not parse, or whose name is not its folder's, is skipped with a log
line and the others are listed. Every skill is on until switched off: the switches are
`<data>/agent/skills.json`, `{"<name>": false}` for each one switched off.

Reading the folders and writing a skill run in worker threads; one lock keeps writes in
order. The parser (`parse_skill`, `render_skill`) does no I/O.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import attrs
import trio

from actors.errors import ActorError, Invalid, NotFound
from actors.fs.paths import NotRegularFile, PathRefused, read_regular, read_workspace_bytes, resolve

log = logging.getLogger("bmoe.skills")

SKILL_FILE = "SKILL.md"
SOURCES = ("bundled", "user", "workspace")
NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
MAX_NAME_CHARS = 64
MAX_TITLE_CHARS = 200
MAX_DESCRIPTION_CHARS = 1024
MAX_BODY_BYTES = 64 * 1024
MAX_FILE_BYTES = 256 * 1024
MAX_SKILLS_PER_PLACE = 200
MAX_SCAN_ENTRIES = 4 * MAX_SKILLS_PER_PLACE  # entries of a place's folder looked at
MAX_SWITCHES_BYTES = 1024 * 1024  # skills.json; a switch is a name and `false`
_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)\s*:(?:\s+(.*))?$")
_FENCE = "---"


class SkillExists(ActorError):
    """A new skill repeats the name of one already listed."""


class SkillFormatError(ValueError):
    """A SKILL.md that cannot be read as a skill; the text says why."""


@attrs.frozen
class SkillText:
    name: str
    description: str
    body: str
    title: str | None = None
    allowed_tools: tuple[str, ...] | None = None  # front matter `allowed-tools`: the run's tools once loaded


@attrs.frozen
class Skill:
    name: str
    description: str
    body: str
    source: str
    title: str | None = None
    enabled: bool = True
    allowed_tools: tuple[str, ...] | None = None

    @property
    def shown_title(self) -> str:
        return self.title or default_title(self.name)

    def to_json(self) -> dict[str, str | bool]:
        return {"name": self.name, "title": self.shown_title, "description": self.description,
                "source": self.source, "enabled": self.enabled, "body": self.body}

    def reading(self) -> dict[str, object]:
        """What a person reads of the skill: its fields, its `allowed-tools` and its SKILL.md."""
        text = SkillText(name=self.name, description=self.description, body=self.body, title=self.title,
                         allowed_tools=self.allowed_tools)
        return {**self.to_json(), "allowed_tools": None if self.allowed_tools is None else list(self.allowed_tools),
                "file": render_skill(text)}


def default_title(name: str) -> str:
    words = name.replace("-", " ").strip()
    return words[:1].upper() + words[1:]


def check_name(name: str) -> str | None:
    """Why `name` cannot be a skill's name, or None."""
    if not name or len(name) > MAX_NAME_CHARS or not NAME.match(name):
        return (
            f"a skill's name is kebab-case (lower-case letters, digits and single '-'), "
            f"at most {MAX_NAME_CHARS} characters"
        )
    return None


# ---- the file format (no I/O) ----


def _scalar(raw: str) -> str:
    raw = raw.strip()
    if raw.startswith('"'):
        try:
            value = json.loads(raw)
        except ValueError:
            raise SkillFormatError(f"the quoted value {raw[:40]!r} is not closed or has a bad escape") from None
        if not isinstance(value, str):
            raise SkillFormatError(f"the value {raw[:40]!r} is not text")
        return value
    if raw.startswith("'"):
        if len(raw) < 2 or not raw.endswith("'"):
            raise SkillFormatError(f"the quoted value {raw[:40]!r} is not closed")
        return raw[1:-1].replace("''", "'")
    if " #" in raw:
        raw = raw[: raw.index(" #")].rstrip()
    return raw


def _front_matter(lines: list[str]) -> dict[str, str]:
    """`key: value` lines; a quoted value, a plain one (indented lines go on with it),
    or a block (`|` keeps lines, `>` folds them)."""
    out: dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[0] in " \t":
            raise SkillFormatError(f"the front matter line {line.strip()[:40]!r} is indented with no key before it")
        m = _KEY.match(line.rstrip())
        if m is None:
            raise SkillFormatError(f"the front matter line {line.strip()[:40]!r} is not `key: value`")
        key, raw = m.group(1), (m.group(2) or "").strip()
        more: list[str] = []
        while i < len(lines) and (not lines[i].strip() or lines[i][0] in " \t"):
            more.append(lines[i])
            i += 1
        while more and not more[-1].strip():
            more.pop()
        if raw[:1] in ("|", ">") and raw.rstrip("+-") in ("|", ">"):
            texts = [m.strip() for m in more]
            value = "\n".join(texts) if raw[0] == "|" else " ".join(t for t in texts if t)
        elif raw[:1] in ('"', "'") and more:
            value = _scalar(" ".join([raw, *(m.strip() for m in more)]))
        else:
            value = " ".join([_scalar(raw), *(m.strip() for m in more)]).strip() if raw or more else ""
        if key in out:
            raise SkillFormatError(f"the front matter names {key} twice")
        out[key] = value
    return out


def parse_skill(text: str) -> SkillText:
    """A SKILL.md's name, description, title and instructions, or SkillFormatError."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n")
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != _FENCE:
        raise SkillFormatError("it does not start with front matter (a line '---')")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].rstrip() in (_FENCE, "..."))
    except StopIteration:
        raise SkillFormatError("its front matter has no closing '---' line") from None
    meta = _front_matter(lines[1:end])
    name = meta.get("name", "")
    if not name:
        raise SkillFormatError("its front matter has no name")
    why = check_name(name)
    if why:
        raise SkillFormatError(f"its name {name[:80]!r} is not valid: {why}")
    description = " ".join(meta.get("description", "").split())
    if not description:
        raise SkillFormatError("its front matter has no description")
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise SkillFormatError(f"its description is longer than {MAX_DESCRIPTION_CHARS} characters")
    title = " ".join(meta.get("title", "").split()) or None
    if title is not None and len(title) > MAX_TITLE_CHARS:
        raise SkillFormatError(f"its title is longer than {MAX_TITLE_CHARS} characters")
    body = "\n".join(lines[end + 1 :]).strip("\n")
    allowed = meta.get("allowed-tools")
    return SkillText(name=name, description=description, body=body + "\n" if body.strip() else "", title=title,
                     allowed_tools=tool_list(allowed) if allowed is not None else None)


def tool_list(value: str) -> tuple[str, ...]:
    """`allowed-tools` as written: `[a, b]`, `a, b`, `a b`, or a block list (`- a`)."""
    words = re.split(r"[,\s]+", value.strip().strip("[]"))
    names = tuple(w.strip("'\"") for w in words if w and w != "-")
    for name in names:
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", name):
            raise SkillFormatError(f"allowed-tools names {name[:40]!r}, which is not a tool's name")
    return names


def render_skill(skill: SkillText) -> str:
    """The SKILL.md for a skill; `parse_skill` reads it back as it was given."""
    # JSON strings are YAML double-quoted scalars, and parse_skill reads them with json.
    head = ["---", f"name: {skill.name}"]
    if skill.title:
        head.append(f"title: {json.dumps(skill.title, ensure_ascii=False)}")
    head.append(f"description: {json.dumps(skill.description, ensure_ascii=False)}")
    if skill.allowed_tools is not None:
        head.append(f"allowed-tools: [{', '.join(skill.allowed_tools)}]")
    head.append("---")
    return "\n".join(head) + "\n\n" + skill.body.strip("\n") + "\n"


def check_new(name: str, description: str, body: str, title: str | None) -> SkillText:
    """A skill a person writes, checked; Invalid says what is wrong."""
    why = check_name(name)
    if why:
        raise Invalid(f"name: {why}.")
    description = " ".join(description.split())
    if not description:
        raise Invalid("description: say in a sentence when the skill is useful.")
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise Invalid(f"description: at most {MAX_DESCRIPTION_CHARS} characters.")
    title = " ".join((title or "").split()) or None
    if title is not None and len(title) > MAX_TITLE_CHARS:
        raise Invalid(f"title: at most {MAX_TITLE_CHARS} characters.")
    if not body.strip():
        raise Invalid("body: write the skill's instructions.")
    if len(body.encode("utf-8")) > MAX_BODY_BYTES:
        raise Invalid(f"body: at most {MAX_BODY_BYTES // 1024} KiB.")
    if "\x00" in body:
        raise Invalid("body: it holds a NUL character.")
    return SkillText(name=name, description=description, body=body.strip("\n") + "\n", title=title)


# ---- reading the places ----


def _list_folder(folder: Path) -> list[os.DirEntry[str]] | None:
    """The first MAX_SCAN_ENTRIES entries of a place's folder, by name; None when it
    cannot be read (absent is an empty list)."""
    try:
        with os.scandir(folder) as it:
            entries = list(itertools.islice(it, MAX_SCAN_ENTRIES))
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        log.warning("cannot read the skills folder %s: %s", folder, exc.strerror)
        return None
    if len(entries) >= MAX_SCAN_ENTRIES:
        log.warning("more than %d entries in %s; only some are read", MAX_SCAN_ENTRIES, folder)
    return sorted(entries, key=lambda e: e.name)


def _read_skill_file(path: str, confine: Path | None) -> bytes | None:
    """At most MAX_FILE_BYTES + 1 bytes of a SKILL.md; None (with a log line) when it is
    not a regular file, or, with `confine`, lies outside it (actors/fs/paths.py)."""
    if confine is not None:
        raw = read_workspace_bytes(confine, os.path.relpath(path, os.path.realpath(confine)), MAX_FILE_BYTES + 1)
        if raw is None:
            log.warning("skipping skill %s: it is not a regular file inside the workspace", path)
        return raw
    try:
        return read_regular(path, MAX_FILE_BYTES + 1, follow=True)
    except NotRegularFile as exc:
        log.warning("skipping skill %s: it is %s", path, exc.kind)
    except OSError as exc:
        log.warning("skipping skill %s: %s", path, exc.strerror or exc)
    return None


def read_place(folder: Path, source: str, *, confine: Path | None = None) -> list[Skill]:
    """The skills of one place, each `<folder>/<name>/SKILL.md`; a bad one is skipped
    with a log line. With `confine` (a workspace's own skills) the folder and every
    file are read like the file tools read a workspace's files: a link that leads out
    of `confine` is not followed, and only a regular file is read (a FIFO or a device
    is never waited on). Every place reads at most MAX_SCAN_ENTRIES entries and
    MAX_FILE_BYTES of each file."""
    if confine is not None:
        try:
            folder = resolve(confine, os.path.relpath(folder, confine))
        except PathRefused:
            log.warning("skipping the workspace skills folder %s: it leads out of the workspace", folder)
            return []
    entries = _list_folder(folder)
    if entries is None:
        return []
    out: list[Skill] = []
    for entry in entries:
        if len(out) >= MAX_SKILLS_PER_PLACE:
            log.warning("more than %d skills in %s; the rest are not read", MAX_SKILLS_PER_PLACE, folder)
            break
        path = os.path.join(entry.path, SKILL_FILE)
        try:
            if not entry.is_dir() or not os.path.lexists(path):
                continue
        except OSError:
            continue
        raw = _read_skill_file(path, confine)
        if raw is None:
            continue
        try:
            if len(raw) > MAX_FILE_BYTES:
                raise SkillFormatError(f"it is larger than {MAX_FILE_BYTES // 1024} KiB")
            text = parse_skill(raw.decode("utf-8"))
            if text.name != entry.name:
                raise SkillFormatError(f"its name {text.name!r} is not its folder's ({entry.name!r})")
        except UnicodeDecodeError:
            log.warning("skipping skill %s: it is not UTF-8 text", path)
            continue
        except SkillFormatError as exc:
            log.warning("skipping skill %s: %s", path, exc)
            continue
        out.append(Skill(name=text.name, description=text.description, body=text.body, source=source,
                         title=text.title, allowed_tools=text.allowed_tools))
    return out


def workspace_skills_folder(workspace: Path) -> Path:
    return workspace / ".bmoe" / "skills"


class SkillCatalog:
    """The skills of the three places and their switches; see the module docstring."""

    def __init__(self, *, shipped: Path | None, data_dir: Path, write_file: Callable[[Path, bytes], None]) -> None:
        self._shipped = shipped
        self._user = data_dir / "skills"
        self._switches_path = data_dir / "agent" / "skills.json"
        self._write = write_file
        self._lock = trio.Lock()
        self._limiter = trio.CapacityLimiter(2)

    @property
    def user_folder(self) -> Path:
        return self._user

    # -- reading (worker threads) --

    def _switches(self) -> dict[str, bool]:
        try:
            raw = read_regular(self._switches_path, MAX_SWITCHES_BYTES + 1, follow=True)
            if len(raw) > MAX_SWITCHES_BYTES:
                raise ValueError(f"it is larger than {MAX_SWITCHES_BYTES // 1024} KiB")
            data = json.loads(raw)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("cannot read the skill switches %s (%s); every skill is on", self._switches_path, exc)
            return {}
        if not isinstance(data, dict):
            return {}
        return {str(k): v for k, v in data.items() if isinstance(v, bool)}

    def _places(self, workspace: Path | None) -> list[list[Skill]]:
        places = [read_place(self._shipped, "bundled") if self._shipped else [], read_place(self._user, "user")]
        if workspace is not None:
            places.append(read_place(workspace_skills_folder(workspace), "workspace", confine=workspace))
        return places

    def read(self, workspace: Path | None = None) -> list[Skill]:
        """Every skill by name (a later place replacing an earlier one), with its switch."""
        merged: dict[str, Skill] = {}
        for place in self._places(workspace):
            for skill in place:
                merged[skill.name] = skill
        switches = self._switches()
        return [attrs.evolve(s, enabled=switches.get(s.name, True)) for _, s in sorted(merged.items())]

    async def listing(self, workspace: Path | None = None) -> list[Skill]:
        return await trio.to_thread.run_sync(self.read, workspace, limiter=self._limiter)

    async def switched_on(self, workspace: Path | None = None) -> list[tuple[str, str]]:
        """(name, description) of every switched-on skill, for the system prompt."""
        return [(s.name, s.description) for s in await self.listing(workspace) if s.enabled]

    async def find(self, name: str, workspace: Path | None = None) -> Skill | None:
        if check_name(name):
            return None
        return next((s for s in await self.listing(workspace) if s.name == name), None)

    # -- writing (one at a time) --

    async def create(self, name: str, description: str, body: str, title: str | None = None) -> Skill:
        """A person's new skill; SkillExists when a bundled or a person's skill has the name."""
        text = check_new(name, description, body, title)
        async with self._lock:
            if await self.find(name) is not None:
                raise SkillExists(f"A skill named {name} exists already; change it with PUT /api/skills/{name}.")
            await self._write_user(text)
        return await self._get(name)

    async def put(self, name: str, description: str, body: str, title: str | None = None) -> Skill:
        """Write the person's version of a listed skill (a bundled one included)."""
        text = check_new(name, description, body, title)
        async with self._lock:
            if await self.find(name) is None:
                raise NotFound(f"There is no skill named {name}.")
            await self._write_user(text)
        return await self._get(name)

    async def set_enabled(self, name: str, enabled: bool, workspace: Path | None = None) -> Skill:
        async with self._lock:
            if await self.find(name, workspace) is None:
                raise NotFound(f"There is no skill named {name}.")
            await trio.to_thread.run_sync(self._write_switch, name, enabled, limiter=self._limiter)
        return await self._get(name, workspace)

    async def delete(self, name: str) -> None:
        """Delete a person's own skill (a bundled one of the same name shows again)."""
        async with self._lock:
            skill_file = self._user / name / SKILL_FILE
            if check_name(name) is None and await trio.Path(skill_file).is_file():
                await trio.to_thread.run_sync(shutil.rmtree, self._user / name, limiter=self._limiter)
                return
            if await self.find(name) is not None:
                raise Invalid(f"{name} is a shipped skill, not one of yours: switch it off instead of deleting it.")
            raise NotFound(f"There is no skill named {name}.")

    async def _get(self, name: str, workspace: Path | None = None) -> Skill:
        skill = await self.find(name, workspace)
        if skill is None:  # written, then not readable: a bug or a race with the disk
            raise NotFound(f"The skill {name} could not be read back.")
        return skill

    async def _write_user(self, text: SkillText) -> None:
        data = render_skill(text).encode("utf-8")
        await trio.to_thread.run_sync(self._write, self._user / text.name / SKILL_FILE, data, limiter=self._limiter)

    def _write_switch(self, name: str, enabled: bool) -> None:
        switches = self._switches()
        if enabled:
            switches.pop(name, None)
        else:
            switches[name] = False
        data = json.dumps(switches, ensure_ascii=False, indent=1, sort_keys=True).encode("utf-8")
        self._write(self._switches_path, data)
