"""benchmarks.targets judges issue 13's targets from a run's numbers: the bounds and
their direction, what is not measured, and what a smaller run only reports."""

from __future__ import annotations

from benchmarks import targets
from benchmarks.scenarios import claims, memory, soak


def by_name(items: list[dict]) -> dict[str, dict]:
    return {t["target"]: t for t in items}


def find(items: list[dict], fragment: str) -> dict:
    (match,) = [t for t in items if fragment in t["target"]]
    return match


def test_drain_is_judged_with_start_up_and_shows_the_ratio_without() -> None:
    cases = {
        "drain_default": {
            "ratios": {"pgqueuer": {"jobs_per_s_with_startup": 1.9, "jobs_per_s": 2.6}}
        },
        "drain_32": {"ratios": {"pgqueuer": {"jobs_per_s_with_startup": 2.2, "jobs_per_s": 3.0}}},
    }
    items = targets.evaluate(cases, {})
    default = find(items, "default concurrency")
    assert default["met"] is False and default["number"] == 1.9
    assert "without start-up 2.60x" in default["value"]
    assert find(items, "concurrency 32")["met"] is True


def test_latency_ratios_are_upper_bounds() -> None:
    cases = {"latency": {"ratios": {"pgqueuer": {"p50_ms": 0.7, "p99_ms": 0.8}}}}
    items = targets.evaluate(cases, {})
    assert find(items, "latency p50 <= 0.75x")["met"] is True
    assert find(items, "latency p99 <= 0.75x")["met"] is False


def test_a_ratio_that_misses_by_less_than_the_rounding_shows_a_third_decimal() -> None:
    cases = {"latency": {"ratios": {"pgqueuer": {"p50_ms": 0.7536, "p99_ms": 0.7464}}}}
    items = targets.evaluate(cases, {})
    p50, p99 = find(items, "latency p50 <= 0.75x"), find(items, "latency p99 <= 0.75x")
    assert p50["met"] is False and p50["value"] == "0.754x"
    assert p99["met"] is True and p99["value"] == "0.75x"


def test_absent_cases_are_not_measured_and_nothing_is_invented() -> None:
    for t in targets.evaluate({}, {}):
        assert t["value"] == targets.NOT_MEASURED
        assert t["met"] is None and t["number"] is None


def test_ceiling_fraction_is_judged_against_half() -> None:
    derived = {
        "drain_default_of_ceiling": {
            "batch": 64,
            "drain_jobs_per_s": 4000.0,
            "ceiling_jobs_per_s": 10000.0,
            "fraction": 0.4,
            "fraction_with_startup": 0.3,
            "ceiling_2_clients_jobs_per_s": 16000.0,
            "fraction_2_clients": 0.25,
        }
    }
    ceiling = find(targets.evaluate({}, derived), "pgbench")
    assert ceiling["met"] is False and ceiling["value"].startswith("40%")
    assert "batch 64, 1 client" in ceiling["value"]


def scaling_case(largest: int, p50s: list[float]) -> dict:
    sizes = [*(("queued", n) for n in claims.FULL_SIZES), ("finished", claims.FULL_SIZES[-1])]
    runs = {
        f"{label}_{min(n, largest)}": {"rows": min(n, largest), "claim_p50_ms": p50}
        for (label, n), p50 in zip(sizes, p50s, strict=True)
    }
    runs = dict(sorted(runs.items()))  # as the JSON results hold them: keys sorted
    return {"claim_scaling": {"results": {"taskq": [{"ok": True, "sizes": runs}]}}}


def test_claim_flatness_is_judged_only_at_full_size() -> None:
    flat = scaling_case(claims.FULL_SIZES[-1], [1.0, 1.1, 1.2, 1.3, 1.4])
    assert find(targets.evaluate(flat, {}), "claim latency")["met"] is True
    steep = scaling_case(claims.FULL_SIZES[-1], [1.0, 1.1, 1.2, 1.8, 1.4])
    assert find(targets.evaluate(steep, {}), "claim latency")["met"] is False
    small = scaling_case(100_000, [1.0, 1.1, 1.2, 1.8, 1.4])
    judged = find(targets.evaluate(small, {}), "claim latency")
    assert judged["met"] is None and "not judged" in judged["value"]


def test_rss_target_needs_the_full_number_of_jobs() -> None:
    def cases(jobs: int) -> dict:
        return {
            "rss": {
                "summary": {"taskq": {"rss_start_mib": 40.0, "rss_end_mib": 50.0}},
                "results": {"taskq": [{"ok": True, "jobs": jobs}]},
            }
        }

    assert find(targets.evaluate(cases(memory.TARGET_JOBS), {}), "RSS")["met"] is False
    assert find(targets.evaluate(cases(5000), {}), "RSS")["met"] is None


def soak_case(rate: float, finished_per_s: float, backlog_end: float, end_mib: float) -> dict:
    point = {"n_dead_tup": 0}
    run = {
        "ok": True,
        "target_rate": rate,
        "target_duration_s": soak.TARGET_DURATION_S,
        "duration_s": soak.TARGET_DURATION_S,
        "enqueue_per_s": rate,
        "drain_per_s": finished_per_s,
        "backlog": {"ref": 100.0, "end": backlog_end, "max": backlog_end},
        "size": {"ref_mib": 100.0, "end_mib": end_mib},
        "start": point,
        "ref": {"n_dead_tup": 0, "total_mib": 100.0, "n_live_tup": 250_000},
        "end": {"n_dead_tup": 0, "total_mib": end_mib, "n_live_tup": 250_000},
    }
    return {"soak": {"results": {"taskq": [run]}}}


def test_soak_judges_rate_backlog_and_size() -> None:
    good = targets.evaluate(soak_case(soak.TARGET_RATE, 4990.0, 200.0, 140.0), {})
    assert [t["met"] for t in good if t["target"].startswith("soak:")] == [True, True, True]
    slow = targets.evaluate(soak_case(soak.TARGET_RATE, 4000.0, 120_000.0, 160.0), {})
    assert [t["met"] for t in slow if t["target"].startswith("soak:")] == [False, False, False]
    assert "finished 4,000/s" in find(slow, "sustained")["value"]
    assert "per live row 419 -> 671 B" in find(slow, "jobs table")["value"]
    quick = targets.evaluate(soak_case(200.0, 200.0, 0.0, 1.0), {})
    assert all(t["met"] is None for t in quick if t["target"].startswith("soak:"))


def test_soak_on_a_server_without_autovacuum_is_reported_not_judged() -> None:
    cases = soak_case(soak.TARGET_RATE, 1100.0, 2_000_000.0, 290.0)
    cases["soak"]["results"]["taskq"][0]["autovacuum"] = "off"
    for t in targets.evaluate(cases, {}):
        if t["target"].startswith("soak:"):
            assert t["met"] is None and "autovacuum is off" in t["value"]
            assert t["number"] is not None
