"""The notifier's committed tail: what a local relay may send without reading the table."""

from durable_responses.store.db.notify import Notifier
from durable_responses.store.records import EventRow


def rows(a: int, b: int) -> list[EventRow]:
    return [EventRow(i, "t", "{}") for i in range(a, b)]


def test_tail_only_for_watched_responses_and_only_contiguous() -> None:
    n = Notifier()
    n.committed("r", rows(0, 3))
    assert n.tail_after("r", -1) is None  # nobody watched: nothing kept
    sub = n.subscribe("r")
    n.committed("r", rows(3, 5))
    assert [r.seq for r in n.tail_after("r", 2) or []] == [3, 4]
    assert n.tail_after("r", 4) == []  # covered, nothing new yet
    assert n.tail_after("r", 1) is None  # reaches back before the tail: read the table
    n.committed("r", rows(7, 8))  # a gap (rows 5-6 came another way): start over
    assert n.tail_after("r", 4) is None
    assert [r.seq for r in n.tail_after("r", 6) or []] == [7]
    sub.close()
    assert n.tail_after("r", 6) is None  # forgotten with its last watcher


def test_a_wake_up_says_whether_the_tail_tells_the_whole_story() -> None:
    """The outbox's own commits (rows in the tail) need no read of the table; any other
    wake-up (rows committed another way, a run that ended, shutdown) does."""
    n = Notifier()
    sub = n.subscribe("r")
    assert sub.clear() is False
    n.committed("r", rows(0, 2))
    n.publish_committed(["r"])
    assert sub._event.is_set()
    assert sub.clear() is False  # the tail has the rows
    n.publish("r")
    assert sub.clear() is True  # something else changed: read the table
    assert sub.clear() is False  # once
    n.publish_committed(["r"])
    n.publish_all()
    assert sub.clear() is True  # a foreign wake-up is not lost behind a local one
    other = n.subscribe("other")
    n.publish_committed(["r"])
    assert other.clear() is False and not other._event.is_set()
    sub.close()
    other.close()
