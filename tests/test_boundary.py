"""The default boundary: the seeds' hosts and ports, and max_depth."""

from searchcrawl.boundary import Boundary
from searchcrawl.status import Status


def test_seed_hosts_and_ports_only() -> None:
    boundary = Boundary(["http://intranet.example.com/start", "https://docs.example.com:8443/"], max_depth=2)
    assert boundary.check("http://intranet.example.com/a/b.html").allowed
    assert boundary.check("http://INTRANET.example.com:80/x").allowed
    assert boundary.check("https://docs.example.com:8443/x").allowed
    decision = boundary.check("http://www.example.com/")
    assert (decision.allowed, decision.status) == (False, Status.EXCLUDED_DOMAIN)
    assert "www.example.com" in decision.rule
    decision = boundary.check("http://intranet.example.com:8080/")
    assert (decision.allowed, decision.status) == (False, Status.EXCLUDED_PORT)
    assert boundary.check("https://docs.example.com/").status == Status.EXCLUDED_PORT
    assert boundary.check("mailto:someone@intranet.example.com").status == Status.EXCLUDED_DOMAIN


def test_depth_limit() -> None:
    boundary = Boundary(["http://h/"], max_depth=2)
    assert boundary.check("http://h/a", depth=2).allowed
    decision = boundary.check("http://h/a", depth=3)
    assert (decision.allowed, decision.status) == (False, Status.EXCLUDED_DEPTH)


def test_file_seeds_stay_below_their_folder() -> None:
    boundary = Boundary(["file:///srv/docs/index.html"], max_depth=5)
    assert boundary.check("file:///srv/docs/sub/page.html").allowed
    assert boundary.check("file:///srv/other/page.html").status == Status.EXCLUDED_PATH
    assert boundary.check("http://h/").status == Status.EXCLUDED_DOMAIN
