"""The engine actor: the turn line.

Every model turn (an agent round, later a `/v1` request or a task's round) goes
through one mailbox and is served in arrival order, one at a time. A caller that is
cancelled while its turn waits withdraws only its own place; one cancelled while its
turn runs raises that turn's abort flag, which the backend observes at its
cancellation points (between tokens, and inside llama.cpp's prefill through the abort
callback). The flag belongs to the turn and is lent to the backend only for that
generation, so it can never stop a later turn.

Another model is loaded by a message on the same line (`switch`): the turn in progress
finishes, the turns queued behind the switch wait, the old model is let go, the new
one loaded, and the next turn runs on it. A model that does not load leaves the old
one serving (loaded again with the loader that made it, since it was let go first:
two models at once may not fit in the computer's memory).

A model nobody has used for `idle_unload_s` (no turn queued) is let go, so a
background service does not hold gigabytes while the person is away; the engine keeps
what it knew of it (`Unloaded`: its name, context, path and device) and loads it again,
with the same loader, when the next turn reaches the front of the line. Clients are
told each change (`on_state`): asleep, loading, loaded.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import attrs
import trio

from actors.actor import MAILBOX_SIZE, ActorStats, Reply, fail_pending, mailbox_depth, next_id
from actors.errors import ActorGone, EngineError, NoModel, TurnFailed
from actors.model.backends.memory import release_idle_memory
from actors.model.turns import Aborted, AbortFlag, Backend, Emit, Piece, TurnInput, TurnResult

# How long a cancelled caller waits, shielded, for the backend to let go of its turn.
ABORT_GRACE_S = 10.0
# How long the engine waits, shielded, for its backend to let go of the model at the end.
BACKEND_CLOSE_S = 5.0

NO_MODEL_TEXT = (
    "No model is loaded. Start the daemon with --model PATH.gguf (or without --no-model "
    "to use the bundled one), or pick a provider for this conversation, then send the "
    "message again."
)


@attrs.define(eq=False)
class _Turn:
    input: TurnInput
    emit: Emit
    owner: str
    on_start: Callable[[], object] | None = None  # told once the turn line reaches it
    id: str = attrs.field(factory=lambda: next_id("turn"))
    abort: threading.Event = attrs.field(factory=AbortFlag)
    reply: Reply[TurnResult] = attrs.field(factory=Reply)
    released: trio.Event = attrs.field(factory=trio.Event)
    withdrawn: bool = False
    started: bool = False


# Loads a backend (in a worker thread); raises EngineError with a plain reason when it cannot.
Loader = Callable[[], Awaitable["Backend"]]


@attrs.define(eq=False)
class _Switch:
    load: Loader
    reply: Reply[None] = attrs.field(factory=Reply)


@attrs.frozen
class Unloaded:
    """What the engine remembers of a model it let go for idleness: enough to describe
    it (/health, the models page, a conversation's context size) without holding it.
    Not a model: the engine loads the real one again before a turn reaches it."""

    model_id: str
    n_ctx: int
    path: Any = None  # the GGUF's Path, for a local model
    n_gpu_layers: int = 0
    where: dict[str, Any] | None = None  # its device() as last loaded
    n_params: int = 0  # its size, when the backend says (0: not known)

    @classmethod
    def of(cls, backend: Backend) -> Unloaded:
        where = getattr(backend, "device", None)
        return cls(backend.model_id, int(backend.n_ctx), getattr(backend, "path", None),
                   int(getattr(backend, "n_gpu_layers", 0) or 0), where() if callable(where) else None,
                   int(getattr(backend, "n_params", 0) or 0))

    def device(self) -> dict[str, Any] | None:
        return self.where

    async def generate(self, turn: TurnInput, emit: Emit, abort: threading.Event) -> TurnResult:
        raise TurnFailed("The model is not in memory; the engine loads it before a turn.")

    async def aclose(self) -> None:
        return None


ModelStateName = Literal["loaded", "loading", "asleep"]


@attrs.frozen
class ModelState:
    """What clients are told of the model: which one, its context, and whether it is
    in memory (`loaded`), being loaded for a waiting turn, or let go for idleness."""

    model: str
    n_ctx: int
    state: ModelStateName

    @property
    def loaded(self) -> bool:
        return self.state == "loaded"


@attrs.frozen
class EngineCounters:
    served: int
    withdrawn: int
    aborted: int
    unloads: int = 0  # models let go for idleness
    reloads: int = 0  # and loaded again for a turn


class Engine:
    """Serialises model turns; see the module docstring."""

    def __init__(self, backend: Backend | None, *, loader: Loader | None = None, idle_unload_s: float = 0) -> None:
        """`loader`: what loads `backend` again, should a switch to another model fail
        after this one was let go, or after it was let go for idleness (None: a switch
        loads the new model first, and the model is never let go for idleness).
        `idle_unload_s`: let the model go after this long with no turn (0: never)."""
        self._backend = backend
        self._loader = loader
        self._asleep: Unloaded | None = None
        self._waking = False
        self.idle_unload_s = idle_unload_s
        self._switching = False
        self._unloads = 0
        self._reloads = 0
        # Told each model that begins to serve (a switch's), once it serves.
        self.on_model: Callable[[Backend], object] | None = None
        # Told each change of the model's state (asleep, loading, loaded again).
        self.on_state: Callable[[ModelState], object] | None = None
        self._send, self._rx = trio.open_memory_channel[_Turn | _Switch](MAILBOX_SIZE)
        self._current: _Turn | None = None
        self._served = 0
        self._withdrawn = 0
        self._aborted = 0
        self._running = False
        self._stopped = trio.Event()
        self.order: list[str] = []  # owners in the order their turns started (bench, tests)
        self.keep_order = False

    @property
    def backend(self) -> Backend | Unloaded | None:
        """The model that serves: the loaded one, or what is remembered of one let go
        for idleness (an `Unloaded`, loaded again for the next turn)."""
        return self._backend if self._backend is not None else self._asleep

    @property
    def model_id(self) -> str | None:
        backend = self.backend
        return backend.model_id if backend is not None else None

    @property
    def loaded(self) -> bool:
        """Whether a model is in memory now."""
        return self._backend is not None

    def model_state(self) -> ModelState | None:
        """The model as clients are told of it; None when there is none."""
        backend = self.backend
        if backend is None:
            return None
        state: ModelStateName = "loaded" if self._backend is not None else ("loading" if self._waking else "asleep")
        return ModelState(backend.model_id, int(backend.n_ctx), state)

    def _tell_state(self) -> None:
        state = self.model_state()
        if self.on_state is not None and state is not None:
            self.on_state(state)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        self._running = True
        task_status.started()
        try:
            async with self._rx:
                while (msg := await self._next()) is not None:
                    if isinstance(msg, _Switch):
                        await self._switch(msg)
                    else:
                        await self._serve(msg)
        finally:
            self._running = False
            fail_pending(self._rx, "the engine stopped")
            if self._backend is not None:
                await _close(self._backend)
            self._stopped.set()

    async def _next(self) -> _Turn | _Switch | None:
        """The next message (None once the line is closed), letting the model go when
        none comes for idle_unload_s."""
        while True:
            can_sleep = self.idle_unload_s > 0 and self._backend is not None and self._loader is not None
            with trio.move_on_after(self.idle_unload_s if can_sleep else math.inf):
                try:
                    return await self._rx.receive()
                except trio.EndOfChannel:
                    return None
            await self._sleep()

    async def _sleep(self) -> None:
        """Let the model go for idleness, remembering what it was."""
        if self._backend is None:
            return
        self._asleep = Unloaded.of(self._backend)
        await self._let_go(page_out=True)
        self._unloads += 1
        self._tell_state()

    async def _let_go(self, *, page_out: bool) -> None:
        """Close the model in memory and hand back what it held. No reference to it stays
        here: llama-cpp-python's objects sit in reference cycles, which the collection in
        release_idle_memory frees only once nothing else holds them. Inline: a few
        milliseconds once per idle spell or switch, with nothing else queued."""
        backend, self._backend = self._backend, None
        if backend is None:
            return
        await _close(backend)
        del backend
        release_idle_memory(page_out=page_out)

    async def _wake(self) -> None:
        """Load the model let go for idleness again. Raises what its loader raised (the
        model stays asleep, and the next turn tries again)."""
        loader = self._loader
        if self._asleep is None or loader is None:
            return
        self._waking = True
        self._tell_state()
        try:
            backend = await loader()
        finally:
            self._waking = False
        self._backend, self._asleep = backend, None
        self._reloads += 1
        self._tell_state()

    async def _serve(self, turn: _Turn) -> None:
        if turn.withdrawn:
            self._withdrawn += 1
            turn.reply.fail(ActorGone("turn withdrawn"))
            turn.released.set()
            return
        if turn.on_start is not None:
            turn.on_start()
        if self._asleep is not None:
            self._current = turn  # waiting for its model: counted as this turn's time
            turn.started = True
            try:
                await self._wake()
            except EngineError as exc:
                self._tell_state()
                turn.reply.fail(exc)
                turn.released.set()
                return
            finally:
                self._current = None
            if turn.abort.is_set():  # its caller left while the model loaded
                self._aborted += 1
                turn.reply.fail(Aborted())
                turn.released.set()
                return
        backend = self._backend
        if backend is None:
            turn.reply.fail(NoModel(NO_MODEL_TEXT))
            turn.released.set()
            return
        self._current = turn
        turn.started = True
        if self.keep_order:
            self.order.append(turn.owner)

        async def emit(piece: Piece) -> None:
            if turn.abort.is_set():
                raise Aborted()
            await turn.emit(piece)

        try:
            result = await backend.generate(turn.input, emit, turn.abort)
        except Aborted as exc:
            self._aborted += 1
            turn.reply.fail(exc)
        except EngineError as exc:
            turn.reply.fail(exc)
        except Exception as exc:  # a backend bug must not take the turn line down
            turn.reply.fail(TurnFailed(f"The model failed while answering: {exc}"))
        else:
            self._served += 1
            turn.reply.set(result)
        finally:
            self._current = None
            turn.released.set()

    async def _switch(self, msg: _Switch) -> None:
        if self._asleep is not None:
            await self._switch_asleep(msg)
            return
        had_old, old_load = self._backend is not None, self._loader
        self._switching = True
        try:
            if had_old and old_load is not None:
                await self._let_go(page_out=False)  # before the new one loads: not two at once
            try:
                new = await msg.load()
            except EngineError as exc:
                if had_old and old_load is not None:
                    try:
                        self._backend = await old_load()
                    except EngineError:
                        self._loader = None  # neither loads: no model until another switch
                msg.reply.fail(exc)
                return
            # A model that cannot be loaded again (no loader) stays until the new one is in.
            await self._let_go(page_out=False)
            self._backend, self._loader = new, msg.load
            msg.reply.set(None)
            if self.on_model is not None:
                self.on_model(new)
        finally:
            self._switching = False

    async def _switch_asleep(self, msg: _Switch) -> None:
        """A switch while the model is let go: nothing to free; a new model that does
        not load leaves the old one asleep (loaded again for the next turn)."""
        self._switching = True
        try:
            try:
                new = await msg.load()
            except EngineError as exc:
                msg.reply.fail(exc)
                return
            self._backend, self._loader, self._asleep = new, msg.load, None
            msg.reply.set(None)
            if self.on_model is not None:
                self.on_model(new)
        finally:
            self._switching = False

    async def switch(self, load: Loader) -> None:
        """Load another model after the turns queued before this call; the turns queued
        after it run on the new one. Raises what `load` raised when the new one does not
        load (the old one then serves again). Cancelled: the switch still happens."""
        if not self._running:
            raise ActorGone("the engine is not running")
        msg = _Switch(load)
        await self._send.send(msg)
        await msg.reply.wait()

    def serving(self) -> str | None:
        """The owner of the turn the line serves now (None: none, or its model loads)."""
        cur = self._current
        return cur.owner if cur is not None and not self._waking else None

    async def turn(self, turn_input: TurnInput, emit: Emit, *, owner: str = "",
                   on_start: Callable[[], object] | None = None) -> TurnResult:
        """Queue a turn and wait for its result. `on_start` is told when the turn line
        reaches it (its model may load then), before the model reads it.

        Cancelled while queued: the turn is withdrawn and never runs. Cancelled while
        running: its abort flag is raised and this waits (shielded, at most
        ABORT_GRACE_S) for the backend to let go, so the next turn starts clean.
        """
        if self.backend is None and not self._switching:
            raise NoModel(NO_MODEL_TEXT)
        if not self._running:
            raise ActorGone("the engine is not running")
        turn = _Turn(turn_input, emit, owner, on_start)
        try:
            await self._send.send(turn)
            return await turn.reply.wait()
        except BaseException:
            turn.withdrawn = True
            turn.abort.set()
            if turn.started:
                with trio.move_on_after(ABORT_GRACE_S) as cs:
                    cs.shield = True
                    await turn.released.wait()
            raise

    def close(self) -> None:
        """Stop taking turns; the loop ends once the queued ones are served."""
        self._send.close()

    async def wait_stopped(self) -> None:
        """Wait until `run` has returned: every turn served or failed, the model let go."""
        await self._stopped.wait()

    def counters(self) -> EngineCounters:
        return EngineCounters(self._served, self._withdrawn, self._aborted, self._unloads, self._reloads)

    def statistics(self) -> ActorStats:
        cur = self._current
        idle = "switching" if self._switching else ("loading" if self._waking else (
            "asleep" if self._asleep is not None else ("idle" if self._running else "stopped")))
        return ActorStats(
            kind="engine",
            id=self.model_id or "none",
            state="generating" if cur else idle,
            mailbox=mailbox_depth(self._rx),
            run=cur.owner if cur else None,
        )


async def _close(backend: Backend) -> None:
    """Let go of a backend's model, shielded, at most BACKEND_CLOSE_S."""
    with trio.move_on_after(BACKEND_CLOSE_S) as cs:
        cs.shield = True
        await backend.aclose()


async def direct_turn(backend: Backend, turn_input: TurnInput, emit: Emit) -> TurnResult:
    """Run a turn on a backend that needs no turn line (a remote provider).

    Cancelled: the turn's abort flag is raised, which the backend observes at its
    next piece, and the cancellation goes on.
    """
    abort = AbortFlag()

    async def guarded(piece: Piece) -> None:
        if abort.is_set():
            raise Aborted()
        await emit(piece)

    try:
        return await backend.generate(turn_input, guarded, abort)
    except BaseException:
        abort.set()
        raise
