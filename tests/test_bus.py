"""EventBus: numbering, replay, local-only events, slow subscribers, unsubscribing."""

from __future__ import annotations

import contextlib

import pytest
import trio
import trio.testing

from actors.bus import REPLAY_EVENTS, Event, EventBus, Subscription


def drain(sub: Subscription) -> list[Event]:
    out = []
    while True:
        try:
            item = sub.receive_nowait()
        except trio.WouldBlock:
            return out
        assert isinstance(item, Event)
        out.append(item)


def test_ids_increase_by_one() -> None:
    bus = EventBus()
    assert bus.last_id == 0
    ids = [bus.publish("tick", {"n": n}).id for n in range(50)]
    assert ids == list(range(1, 51))
    assert bus.last_id == 50
    # local-only events take a number too
    assert bus.publish("secret", {}, local_only=True).id == 51


def test_event_data_json_is_one_compact_line() -> None:
    event = EventBus().publish("msg", {"text": "a\nb é", "n": [1, 2]})
    assert event.data_json() == '{"text":"a\\nb é","n":[1,2]}'
    assert "\n" not in event.data_json()


async def test_live_events_arrive_in_order() -> None:
    bus = EventBus()
    with bus.subscribe() as sub:
        for n in range(10):
            bus.publish("tick", n)
        got = [await sub.receive() for _ in range(10)]
    assert [e.data for e in got] == list(range(10))
    assert [e.id for e in got] == list(range(1, 11))


def test_replay_after_id_returns_later_events_then_live() -> None:
    bus = EventBus()
    for n in range(20):
        bus.publish("tick", n)
    with bus.subscribe(after=15) as sub:
        bus.publish("tick", 20)
        got = drain(sub)
    assert [e.id for e in got] == [16, 17, 18, 19, 20, 21]


def test_no_after_means_no_replay() -> None:
    bus = EventBus()
    for n in range(5):
        bus.publish("tick", n)
    with bus.subscribe() as sub:
        assert drain(sub) == []
        bus.publish("tick", 5)
        assert [e.id for e in drain(sub)] == [6]


def test_replay_holds_at_least_the_last_thousand() -> None:
    bus = EventBus()
    total = max(REPLAY_EVENTS, 1000) + 1500
    for n in range(total):
        bus.publish("tick", n)
    with bus.subscribe(after=total - 1000) as sub:
        got = drain(sub)
    assert [e.id for e in got] == list(range(total - 999, total + 1))
    # From the very start: only what is still held, in order, ending at the last.
    with bus.subscribe(after=0) as sub:
        got = drain(sub)
    assert len(got) >= 1000
    assert [e.id for e in got] == list(range(total - len(got) + 1, total + 1))


def test_replay_after_the_last_id_is_empty() -> None:
    bus = EventBus()
    for n in range(3):
        bus.publish("tick", n)
    with bus.subscribe(after=3) as sub:
        assert drain(sub) == []


def test_local_only_events_never_reach_a_remote_subscriber() -> None:
    bus = EventBus()
    for n in range(6):
        bus.publish("tick", n, local_only=n % 2 == 0)
    with bus.subscribe(after=0, local=False) as remote, bus.subscribe(after=0, local=True) as local:
        for n in range(6, 12):
            bus.publish("tick", n, local_only=n % 2 == 0)
        remote_got = drain(remote)
        local_got = drain(local)
    assert [e.data for e in remote_got] == [1, 3, 5, 7, 9, 11]
    assert not any(e.local_only for e in remote_got)
    assert [e.data for e in local_got] == list(range(12))


async def test_full_queue_drops_only_that_subscriber() -> None:
    bus = EventBus(queue=3)
    with bus.subscribe() as slow, bus.subscribe() as fast:
        assert bus.subscribers == 2
        fast_got = []
        for n in range(10):
            bus.publish("tick", n)
            fast_got.append(await fast.receive())
        assert [e.data for e in fast_got] == list(range(10))
        assert bus.subscribers == 1
        # The slow one gets what fit in its queue, then its stream ends.
        slow_got = [await slow.receive() for _ in range(3)]
        assert [e.data for e in slow_got] == [0, 1, 2]
        with pytest.raises(trio.EndOfChannel):
            await slow.receive()
        # The fast one keeps receiving after the drop.
        bus.publish("tick", 10)
        assert (await fast.receive()).data == 10
    assert bus.subscribers == 0


def test_unsubscribe_on_exit() -> None:
    bus = EventBus()
    assert bus.subscribers == 0
    with bus.subscribe() as _a:
        assert bus.subscribers == 1
        with bus.subscribe(local=False) as _b:
            assert bus.subscribers == 2
        assert bus.subscribers == 1
    assert bus.subscribers == 0
    # Publishing with nobody listening is fine.
    bus.publish("tick", 1)


def test_unsubscribe_when_the_block_raises() -> None:
    bus = EventBus()
    with pytest.raises(RuntimeError), bus.subscribe():
        assert bus.subscribers == 1
        raise RuntimeError("boom")
    assert bus.subscribers == 0
    bus.publish("tick", 1)


async def test_unsubscribe_on_cancel(autojump_clock: trio.abc.Clock) -> None:
    bus = EventBus()
    with trio.move_on_after(1):
        with bus.subscribe() as sub:
            assert bus.subscribers == 1
            await sub.receive()  # nothing comes; the autojumping deadline cancels
    assert bus.subscribers == 0


async def test_publish_never_blocks_on_a_subscriber_that_never_reads() -> None:
    bus = EventBus(queue=1)
    with bus.subscribe():
        for n in range(100):
            bus.publish("tick", n)
        assert bus.subscribers == 0
    assert bus.last_id == 100


async def test_keepalive_pings_quiet_subscribers_only(autojump_clock: trio.abc.Clock) -> None:
    from actors.bus import Ping

    bus = EventBus()
    async with trio.open_nursery() as nursery:
        await nursery.start(bus.keepalive, 10.0)
        with bus.subscribe() as busy:
            seen: list[object] = []
            for _ in range(40):  # 40 s, an event every second: never a ping
                bus.publish("tick", {})
                await trio.sleep(1)
                while True:
                    try:
                        seen.append(busy.receive_nowait())
                    except trio.WouldBlock:
                        break
            assert len(seen) == 40 and not any(isinstance(x, Ping) for x in seen)
        with bus.subscribe() as idle:
            start = trio.current_time()
            with trio.fail_after(10.1):  # nothing published: a ping within the interval
                got = await idle.receive()
            assert isinstance(got, Ping) and trio.current_time() - start >= 5.0
        nursery.cancel_scope.cancel()


async def test_receive_batch_takes_what_is_queued_up_to_the_limit_then_waits_for_more() -> None:
    bus = EventBus()
    with bus.subscribe() as sub:
        for n in range(5):
            bus.publish("tick", n)
        assert [e.data for e in await sub.receive_batch(3)] == [0, 1, 2]
        assert [e.data for e in await sub.receive_batch(3)] == [3, 4]
        got: list[object] = []
        async with trio.open_nursery() as nursery:

            async def take() -> None:
                got.extend(await sub.receive_batch(3))

            nursery.start_soon(take)
            await trio.testing.wait_all_tasks_blocked()
            assert got == []  # waiting: nothing queued
            bus.publish("tick", 5)
        assert [e.data for e in got] == [5]


async def test_a_receive_cancelled_while_waiting_leaves_the_subscriber_fine() -> None:
    bus = EventBus()
    with bus.subscribe() as sub:
        with trio.move_on_after(0.01):
            await sub.receive()
        bus.publish("tick", 1)  # no task to wake: nothing goes wrong
        bus.publish("tick", 2)
        assert [e.data for e in await sub.receive_batch(10)] == [1, 2]


async def test_a_dropped_subscriber_waiting_is_woken_to_see_its_end() -> None:
    bus = EventBus(queue=1)
    with bus.subscribe() as sub:
        bus.publish("tick", 0)
        assert (await sub.receive()).data == 0
        async with trio.open_nursery() as nursery:
            ended = trio.Event()

            async def take() -> None:
                assert [e.data for e in await sub.receive_batch(5)] == [1]
                with pytest.raises(trio.EndOfChannel):
                    await sub.receive_batch(5)
                ended.set()

            nursery.start_soon(take)
            await trio.testing.wait_all_tasks_blocked()
            bus.publish("tick", 1)
            bus.publish("tick", 2)  # the queue is full (1 unread): dropped
            with trio.fail_after(1):
                await ended.wait()
        assert bus.subscribers == 0


async def test_an_event_wakes_a_group_of_waiting_subscribers_and_each_the_next_until_all_have_it() -> None:
    from actors.bus import WAKE_GROUP

    bus = EventBus()
    n = 3 * WAKE_GROUP + 2
    got: list[list[object]] = [[] for _ in range(n)]
    with contextlib.ExitStack() as stack:
        subs = [stack.enter_context(bus.subscribe()) for _ in range(n)]
        async with trio.open_nursery() as nursery:
            for k, sub in enumerate(subs):

                async def take(k: int = k, sub: Subscription = sub) -> None:
                    got[k].extend(e.data for e in await sub.receive_batch(5))

                nursery.start_soon(take)
            await trio.testing.wait_all_tasks_blocked()
            bus.publish("tick", "x")
            # Woken now: the first group only (the others are woken by those, a round later).
            assert sum(1 for s in subs if s._sub.waiter is None) == WAKE_GROUP
            await trio.testing.wait_all_tasks_blocked()
            assert got == [["x"]] * n
