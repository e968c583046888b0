"""What a run of the built-in agent offers its model for a message: the tools and the
system prompt, fixed when the message starts (and again when planning begins or ends,
or a skill narrows the tools), so every round of a message sends the same prefix and
the engine reuses the prompt its cache holds. Also the project's instruction files:
the root's in the prompt, a folder's own the first time a file tool touches it."""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from pathlib import Path

import trio

from actors import notices
from actors.model.turns import ToolSpec
from actors.record import cards
from actors.record.client_tools import ClientTool
from actors.record.modes import Mode
from actors.record.transcript import Transcript
from actors.runs.agent import git_status, instructions, real_names
from actors.runs.agent.ledger import SHELL_TOOL
from actors.runs.agent.prompt import system_prompt
from actors.runs.agent.run_tools import goals, helpers, plans
from actors.runs.agent.run_tools.carrier import PLAN_WRITERS, OwnTools
from actors.runs.agent.small.leader import Leading
from actors.runs.base import RunRequest
from actors.runs.env import Env
from actors.tools.registry import Tool


class Offer:
    """The tools and the system prompt of one run's message; see the module docstring."""

    def __init__(self, transcript: Transcript, env: Env, request: RunRequest, own: OwnTools,
                 leader: Leading) -> None:
        self._t = transcript
        self._env = env
        self._req = request
        self._own = own
        self._leader = leader
        self._today = datetime.date.today()
        self._system: str | None = None
        self._offered: list[Tool] = []  # the workspace's tools offered
        self._run_specs: tuple[ToolSpec, ...] = ()  # the tools the run carries out itself
        self._nested_known: set[str] | None = None  # every nested instruction file, when the index is whole
        self._narrowed: frozenset[str] | None = None  # a loaded skill's allowed-tools, for the rest of the run
        self._skill_names: tuple[str, ...] = ()  # the switched-on skills (use_skill's real names)
        self._git: str | None = None  # the workspace's git state, read once a message (git_status.py)
        self._git_read = False
        self._client: dict[str, ClientTool] = {}  # the client's tools offered, by name
        self._client_specs: tuple[ToolSpec, ...] = ()

    @property
    def system(self) -> str | None:
        return self._system

    @property
    def offered(self) -> tuple[Tool, ...]:
        return tuple(self._offered)

    @property
    def run_specs(self) -> tuple[ToolSpec, ...]:
        return self._run_specs

    def workspace(self) -> Path | None:
        ws = self._t.info.workspace
        return self._env.resolve_workspace(ws) if ws else None

    def narrow(self, tools: Iterable[str]) -> None:
        """The rest of the run offers only these tools (a loaded skill's allowed-tools),
        from the next `prepare` on."""
        self._narrowed = frozenset(tools)

    def planning(self) -> bool:
        return self._own.planning()  # decided once, by the run's own tools that carry plan mode

    def must_call(self) -> bool:
        """Planning ends only with exit_plan_mode or a question (the prompt says so), so
        while those are offered each round must be a call: the local grammar then admits
        only calls, a provider is sent tool_choice "required"."""
        return self.planning() and cards.EXIT_PLAN in self.own_names()

    def own_names(self) -> set[str]:
        return {s.name for s in self._run_specs}

    def offers(self, tool: Tool) -> bool:
        return tool in self._offered

    def client_tool(self, name: str) -> ClientTool | None:
        """The client's tool of that name, when this message offers it."""
        return self._client.get(name)

    def tool_names(self) -> str:
        """Every tool offered, for a call of one that is not."""
        names = [t.name for t in self._offered] + [s.name for s in self._run_specs + self._client_specs]
        return ", ".join(names) or "none"

    def specs(self) -> tuple[ToolSpec, ...]:
        """The tools as this message describes them to the model."""
        return self._env.registry.specs(self._offered) + self._run_specs + self._client_specs

    def round_specs(self) -> tuple[ToolSpec, ...]:
        """The tools as a round describes them: the workspace's as the leading has them
        (a small model is told of the required arguments only), then the run's own,
        then the client's (whole: their schemas are the client's contract)."""
        return (self._leader.parameters(self._env.registry.specs(self._offered)) + self._run_specs
                + self._client_specs)

    def goal_open(self) -> bool:
        goal = self._t.info.goal
        return goal is not None and goal.state == "active" and goals.UPDATE_SPEC in self._run_specs

    async def prepare(self) -> None:
        """The tools and the system prompt of this message. Tools known only at run time
        (an MCP server's) are got ready first. Skills reach local requests only (they
        are this computer's text) and come with a workspace: every skill is a way of
        working in a folder, and offering `use_skill` in plain chat pushes a small
        model into calling it instead of answering."""
        env = self._env
        if env.chat_only:
            return
        if not self._t.info.workspace_tools:
            await self._prepare_without_host()
            return
        ws, mode, local = self.workspace(), self._t.info.mode, self._req.local
        planning = self.planning()
        skills: list[tuple[str, str]] = []
        if env.skills is not None and local and ws is not None and self._leader.offers_skills:
            skills = await env.skills.switched_on(ws)
        # Planning offers what cannot change the workspace (read_only's tools: no MCP
        # tool, whose effect is unknown) and the two file tools, for the plan file only.
        offer_mode: Mode = "read_only" if planning or self._req.helper == "explore" else mode
        await env.registry.prepare(workspace=ws, mode=offer_mode, local=local)
        self._offered = env.registry.offered(workspace=ws, mode=offer_mode, local=local, skills=bool(skills))
        if not self._leader.offers_memory:
            self._offered = [t for t in self._offered if not getattr(t, "memory", False)]
        if planning and self._leader.plans_by_reading:
            self._offered = [t for t in self._offered if t.name != SHELL_TOOL]
        elif planning:
            self._offered += [t for t in map(env.registry.get, PLAN_WRITERS) if t is not None]
        # The run's own tools come with a workspace, as skills do: plain chat gets none
        # (a small model offered a tool calls it instead of answering).
        specs = self._own.specs(planning=planning, mode=mode) if self._offered and ws is not None and local else ()
        if self._req.helper is not None:
            specs = ()  # a helper has the workspace's tools only: it cannot start another
        else:
            specs = self._leader.own_specs(specs, planning=planning)
        if self._narrowed is not None:
            self._offered = [t for t in self._offered if t.name in self._narrowed]
            specs = tuple(s for s in specs if s.name in self._narrowed)
        self._run_specs = specs
        self._skill_names = tuple(name for name, _ in skills)
        self._offer_client({t.name for t in self._offered} | {s.name for s in specs})
        # The workspace's files, shown to a local model (its prompt's index): read once
        # a run, so the prompt stays the same from round to round (its cache holds).
        files = await self.workspace_files() if local else None
        goal = self._t.info.goal
        self._system = system_prompt(
            workspace=ws, mode=mode, today=self._today, tools=bool(self._offered), skills=skills or None,
            instructions=await self._instructions(ws) if ws else None,
            planning=plans.prompt_lines(env.plans.path(self._t.id), plan_file=not self._leader.plans_by_reading)
            if planning and env.plans else None,
            goal=goal.text if goal and goal.state == "active" and goals.UPDATE_SPEC in specs else None,
            helper=helpers.HELPER_LINES[self._req.helper] if self._req.helper else None,
            files=real_names.prompt_index(files) if files else None,
            git=await self._git_block(ws) if ws else None,
        )

    async def _git_block(self, ws: Path) -> str | None:
        """The workspace's branch and status, the same for every prepare of this message."""
        if not self._git_read:
            self._git = await git_status.CACHE.get(ws)
            self._git_read = True
        return self._git
    def _offer_client(self, taken: set[str]) -> None:
        """The client's tools (none to a helper: it answers its parent only). One whose
        name a tool of the daemon took after it was given (an MCP server started since)
        is left out, and the person told once."""
        tools = () if self._req.helper is not None else self._t.info.client_tools
        if self._narrowed is not None:
            tools = tuple(t for t in tools if t.name in self._narrowed)
        for tool in tools:
            hidden = notices.CLIENT_TOOL_HIDDEN.format(name=tool.name)
            if tool.name in taken and not self._t.has_notice(hidden):
                self._t.notice(hidden, "warn")
        self._client = {t.name: t for t in tools if t.name not in taken}
        self._client_specs = tuple(ToolSpec(t.name, t.description, t.parameters) for t in self._client.values())

    async def _prepare_without_host(self) -> None:
        """A conversation without the daemon's own tools (`workspace_tools: false`): the
        client's tools, and the MCP tools when it asked for them (they run in its
        workspace); no file, command, search or helper, no skill, no instruction file."""
        env, info = self._env, self._t.info
        ws, local = self.workspace(), self._req.local
        self._offered, self._run_specs, self._skill_names = [], (), ()
        if info.mcp_tools and ws is not None and local and self._req.helper is None:
            await env.registry.prepare(workspace=ws, mode=info.mode, local=local)
            mcp = set(env.registry.source_names())
            self._offered = [t for t in env.registry.offered(workspace=ws, mode=info.mode, local=local)
                             if t.name in mcp]
        self._offer_client({t.name for t in self._offered})
        self._system = system_prompt(workspace=None, mode=info.mode, today=self._today,
                                     tools=bool(self._offered or self._client), host=False)

    async def workspace_files(self) -> tuple[str, ...] | None:
        """The workspace's files when an offered tool names existing ones (actors/runs/agent/real_names.py)."""
        ws = self.workspace()
        if ws is None or not any(getattr(t, "existing_file_args", ()) for t in self._offered):
            return None
        return await trio.to_thread.run_sync(real_names.workspace_files, ws)

    async def call_names(self) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
        """This round's real names for a local model's grammar (TurnInput.names): the
        files as they are now (the last round may have made one), the skills."""
        if self._t.info.route != "local":
            return ()
        return real_names.call_names(self._offered, await self.workspace_files(), self._skill_names)

    async def _instructions(self, ws: Path) -> str | None:
        """The project's instruction files for the prompt; the conversation records
        which it used."""
        files, index = await trio.to_thread.run_sync(
            lambda: (instructions.root_files(ws), instructions.nested_index(ws))
        )
        self._nested_known = set(index) if len(index) < instructions.INDEX_MAX else None
        used = tuple(f.path for f in files) + tuple(self._t.info.instructions_delivered)
        if used != self._t.info.instructions:
            self._t.set_info(instructions=used)
        return instructions.prompt_block(files, index)

    async def nested_instructions(self, ws: Path, rel: str) -> str | None:
        """A folder's own instruction files, the first time a file tool touches it, as
        text for the call's result (once per conversation)."""
        delivered = set(self._t.info.instructions_delivered)
        wanted = instructions.candidates(rel) - delivered
        if self._nested_known is not None:
            wanted &= self._nested_known  # the index of this message knows every nested file
        if not wanted:
            return None
        found = await trio.to_thread.run_sync(instructions.read_all, ws, sorted(wanted, key=len))
        if not found:
            return None
        paths = tuple(f.path for f in found)
        self._t.set_info(instructions_delivered=self._t.info.instructions_delivered + paths,
                         instructions=self._t.info.instructions + paths)
        return "\n\n".join(f"[The instructions of {f.path}:]\n{f.text}" for f in found)
