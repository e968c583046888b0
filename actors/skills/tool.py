"""use_skill: a switched-on skill's instructions, read when the model needs them.

The system prompt lists each switched-on skill's name and description; this tool gives
the instructions of one (the workspace's own version when it has one). It reads only,
and is offered only when at least one skill is on (`needs_skill`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import attrs

from actors.errors import ToolError
from actors.skills.catalog import SkillCatalog
from actors.tools.registry import ToolContext, ToolOutcome


@attrs.frozen
class UseSkill:
    # Its argument names a switched-on skill: a local model's grammar offers those names
    # (actors/runs/agent/real_names.py).
    skill_args: ClassVar[tuple[str, ...]] = ("name",)
    catalog: SkillCatalog = attrs.field(repr=False, eq=False)
    name: str = "use_skill"
    description: str = (
        "Read a skill's instructions: how to do one kind of task well, step by step. Call it with the name "
        "of a skill from the list in the system prompt before you start that kind of task, then follow them."
    )
    parameters: dict[str, Any] = attrs.field(
        factory=lambda: {
            "type": "object",
            "properties": {"name": {"type": "string", "description": "The skill's name, as the list gives it"}},
            "required": ["name"],
        }
    )
    needs_workspace: bool = False
    needs_skill: bool = True
    offered_read_only: bool = True

    def is_change(self, args: dict[str, Any], workspace: Path | None = None) -> bool:
        return False

    def title(self, args: dict[str, Any]) -> str:
        name = args.get("name")
        return f"Read the skill {name}" if isinstance(name, str) and name else "Read a skill"

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome | None:
        return None

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        name = args.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ToolError('The call needs "name": a skill\'s name from the list in the system prompt.')
        skills = [s for s in await self.catalog.listing(ctx.workspace) if s.enabled]
        skill = next((s for s in skills if s.name == name.strip()), None)
        if skill is None:
            names = ", ".join(s.name for s in skills) or "none"
            raise ToolError(f"There is no switched-on skill named {name!r}. The skills you can use: {names}.")
        text = f"Skill {skill.name}: {skill.shown_title}\n\n{skill.body}"
        if skill.allowed_tools is not None:
            allowed = ", ".join(skill.allowed_tools) or "no tool"
            text += f"\n\n[From now on in this run you may use only: {allowed}]"
        return ToolOutcome(text, narrow=skill.allowed_tools)
