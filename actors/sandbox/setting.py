"""The sandbox setting a person picks for commands: `required`, `auto` or `off`
(actors/sandbox/policy.py says what each does). A word list with nothing to import, for
the command line's options."""

from __future__ import annotations

from typing import Literal

Setting = Literal["required", "auto", "off"]
SETTINGS: tuple[Setting, ...] = ("required", "auto", "off")
