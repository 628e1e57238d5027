"""The suite's own count of requests in flight (tests.conftest.InFlight), with its hold: a
request is answered only once the limit a test checks has been reached, or a while has passed."""

import threading

from tests.conftest import InFlight, wait_for


def test_a_request_is_held_until_enough_to_its_host_are_in_flight() -> None:
    in_flight = InFlight(reach=2, hold=60, unheld=0)
    answered: list[str] = []

    def request(host: str) -> None:
        number = in_flight.enter(host)
        in_flight.wait_for_company(host, number)
        answered.append(host)
        in_flight.leave(host)

    first = threading.Thread(target=request, args=("a",))
    first.start()
    other_host = threading.Thread(target=request, args=("b",))  # held too: company counts per host
    other_host.start()
    wait_for(lambda: in_flight.current == {"a": 1, "b": 1}, timeout=10, what="both requests held")
    assert answered == []
    request("a")  # the second to host a: both of a's are answered
    first.join(timeout=10)
    assert sorted(answered) == ["a", "a"] and in_flight.max_per_host == 2
    request("a")  # once reached, no more holding
    assert answered.count("a") == 3
    request("b")
    other_host.join(timeout=10)
    assert answered.count("b") == 2 and in_flight.max_hosts == 2 and in_flight.alone == 0


def test_a_lone_request_is_answered_after_the_hold() -> None:
    in_flight = InFlight(reach=2, hold=0.05, unheld=0)
    assert in_flight.wait_for_company("a", in_flight.enter("a")) is False  # one at a time: the test sees 1
    in_flight.leave("a")
    assert (in_flight.max_per_host, in_flight.alone) == (1, 1)


def test_robots_txt_and_a_crawls_seed_are_not_held() -> None:
    """A crawler fetches robots.txt before the site's pages, then the seed: nothing else is known
    to it yet. Held, each would wait out the hold (robots.txt holding every page behind it)."""
    in_flight = InFlight(reach=2, hold=60)
    for path in ("/robots.txt", "/index.html", "/robots.txt"):  # a second crawler's robots.txt too
        assert in_flight.wait_for_company("a", in_flight.enter("a", path)) is True
        in_flight.leave("a")
    in_flight.enter("a", "/page1.html")
    assert in_flight.wait_for_company("a", in_flight.enter("a", "/page2.html")) is True  # the second of two at once
    assert in_flight.alone == 0


def test_without_reach_nothing_is_held() -> None:
    in_flight = InFlight(unheld=0)
    assert in_flight.wait_for_company("a", in_flight.enter("a")) is True
