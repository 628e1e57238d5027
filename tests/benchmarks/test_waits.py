"""The wait profiles' summary (tests/benchmarks/waits.py): per page over a crawl's processes."""

import json

from tests.benchmarks.waits import markdown, summarise


def profile(responses: int, cpu: float, user: float, system: float, gc: list[float], pushes: int) -> dict[str, object]:
    return {
        "pid": 1,
        "wall_s": 10.0,
        "cpu_s": cpu,
        "loop_idle_s": 0.5,
        "usage": {"utime": user, "stime": system, "minflt": 300, "majflt": 0, "nvcsw": 40, "nivcsw": 60},
        "gc_s": gc,
        "gc_collections": [10, 2, 1],
        "responses": responses,
        "pushes": pushes,
        "statements": {"COMMIT": {"count": 10, "seconds": 0.01, "slow": 1, "slow_seconds": 0.002, "longest": 0.002}},
    }


def test_the_processes_cpu_is_summed_and_given_per_page_user_system_and_collector_apart(tmp_path) -> None:
    (tmp_path / "1.json").write_text(json.dumps(profile(600, 4.5, 4.0, 0.5, [0.1, 0.1, 0.1], 3)))
    (tmp_path / "2.json").write_text(json.dumps(profile(400, 3.5, 3.0, 0.5, [0.1, 0.0, 0.1], 2)))
    summary = summarise(tmp_path)
    assert summary["cpu_ms_per_page"] == 8.0 and summary["user_ms_per_page"] == 7.0
    assert summary["system_ms_per_page"] == 1.0 and summary["gc_ms_per_page"] == 0.5
    assert summary["gc_full_collections"] == 2 and summary["minor_faults_per_page"] == 0.6
    assert [each["pushes"] for each in summary["per_process"]] == [3, 2]
    assert "system 1.0 ms" in markdown(summary)


def test_a_profile_of_an_older_crawler_without_the_counts_is_summarised_too(tmp_path) -> None:
    old = profile(100, 1.0, 0.9, 0.1, [0.0, 0.0, 0.0], 0)
    for key in ("usage", "gc_s", "gc_collections", "pushes"):
        del old[key]
    (tmp_path / "1.json").write_text(json.dumps(old))
    assert summarise(tmp_path)["user_ms_per_page"] == 0.0
