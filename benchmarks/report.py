"""Medians, pairwise ratios and the printed table."""

from __future__ import annotations

import statistics

from .adapters import ALL
from .scenarios import CASES, Case, lookup

_BY_ID = {c.id: c for c in CASES}


def _values(case: Case, runs: list[dict], key: str) -> list[float | None]:
    return [lookup(r, key) if r.get("ok") else None for r in runs]


def summarise(case: Case, results: dict[str, list[dict]], quick: bool) -> dict:
    """system -> {metric key: median over runs} (+ ``note`` when no run gave a number)."""
    out: dict[str, dict] = {}
    for system, runs in results.items():
        row: dict[str, object] = {}
        for m in case.metrics_for(quick):
            vals = [v for v in _values(case, runs, m.key) if v is not None]
            if vals:
                row[m.key] = statistics.median(vals)
        failures = [r for r in runs if not r.get("ok")]
        if failures:
            row["errors"] = [r.get("error", "?") for r in failures]
        stuck = [r for r in runs if r.get("ok") and r.get("recovered") is False]
        if stuck:
            r = stuck[0]
            row["note"] = (
                f"{r.get('rerun')}/{r.get('inflight')} re-run within "
                f"{r.get('observed_s'):.0f} s: {r.get('what_happens')}"
            )
        out[system] = row
    return out


def ratios(case: Case, results: dict[str, list[dict]], quick: bool) -> dict:
    """peer -> {metric: median of per-run taskq/peer ratios} (runs paired by index)."""
    subject = results.get(case.subject, [])
    out: dict[str, dict] = {}
    for peer in case.peers:
        runs = results.get(peer, [])
        row = {}
        for m in case.metrics_for(quick):
            pairs = [
                (a, b)
                for a, b in zip(
                    _values(case, subject, m.key), _values(case, runs, m.key), strict=False
                )
                if a is not None and b
            ]
            if pairs:
                row[m.key] = statistics.median(a / b for a, b in pairs)
        if row:
            out[peer] = row
    return out


def derived(cases: dict[str, dict]) -> dict:
    """Figures computed across cases: taskq's drain (first job -> queue empty, as pgbench
    has no start-up either; with start-up for information) as a fraction of the pgbench
    ceiling's judged figure (one client: the worker's one claim stream) and of two
    clients'."""
    out = {}
    for cid, case in cases.items():
        extra = _BY_ID[cid].extra
        compare = extra.get("compare_with")
        if not compare or compare not in cases:
            continue
        ceiling = case["summary"].get("taskq", {})
        drain = cases[compare]["summary"].get("taskq", {})
        best = ceiling.get(str(extra["ceiling_key"]))
        if not best or not drain.get("jobs_per_s"):
            continue
        two = ceiling.get("clients_2.jobs_per_s")
        with_startup = drain.get("jobs_per_s_with_startup")
        out[f"{compare}_of_{cid}"] = {
            "batch": ceiling.get("batch"),
            "drain_jobs_per_s": drain["jobs_per_s"],
            "ceiling_jobs_per_s": best,
            "fraction": drain["jobs_per_s"] / best,
            "fraction_with_startup": with_startup / best if with_startup else None,
            "ceiling_2_clients_jobs_per_s": two,
            "fraction_2_clients": drain["jobs_per_s"] / two if two else None,
        }
    return out


def ceiling_line(key: str, d: dict) -> str:
    """One derived ceiling figure in words (the printed table and the markdown)."""
    batch = f"batch {d['batch']:.0f}, " if d.get("batch") else ""
    text = (
        f"{key.replace('_of_', ' vs ')}: taskq drains {d['drain_jobs_per_s']:,.0f} jobs/s = "
        f"{d['fraction']:.0%} of pgbench's {d['ceiling_jobs_per_s']:,.0f} jobs/s "
        f"({batch}1 client)"
    )
    if d.get("fraction_with_startup") is not None:
        text += f"; with start-up {d['fraction_with_startup']:.0%}"
    if d.get("fraction_2_clients") is not None:
        text += (
            f"; {d['fraction_2_clients']:.0%} of 2 clients' "
            f"{d['ceiling_2_clients_jobs_per_s']:,.0f} jobs/s"
        )
    return text


def _fmt(value: float | None, digits: int) -> str:
    if value is None:
        return "-"
    if digits == 0:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def one_line(case: Case, result: dict, quick: bool) -> str:
    if not result.get("ok"):
        return "FAILED: " + str(result.get("error", "?"))[:200]
    if result.get("recovered") is False:
        return f"not re-run within {result.get('observed_s', 0):.0f} s"
    parts = []
    for m in case.metrics_for(quick)[:4]:
        v = lookup(result, m.key)
        if v is not None:
            parts.append(f"{m.label} {_fmt(v, m.digits)} {m.unit}")
    return "; ".join(parts) + f"  ({result.get('wall_s', 0):.1f} s)"


def ordered_systems(out: dict) -> list[str]:
    """The systems of a run in the harness's order (JSON keys come back sorted)."""
    return [a.name for a in ALL if a.name in out["systems"]]


def table(out: dict, quick: bool) -> str:
    """Medians per system and the taskq/peer ratios; notes (n/a, failures) as footnotes."""
    systems = ordered_systems(out)
    header = ["metric", *[out["systems"][s]["label"] for s in systems], "taskq/peer"]
    rows = [header]
    footnotes: list[str] = []

    def footnote(text: str) -> str:
        if text not in footnotes:
            footnotes.append(text)
        return f"[{footnotes.index(text) + 1}]"

    for cid, case in out["cases"].items():
        c = _BY_ID[cid]
        for m in c.metrics_for(quick):
            better = "" if m.higher_is_better else ", lower is better"
            row = [f"{m.label} ({m.unit}{better})"]
            for s in systems:
                summary = case["summary"].get(s, {})
                if s not in case["summary"] and s not in case["notes"]:
                    row.append("")
                elif m.key in summary:
                    row.append(_fmt(summary[m.key], m.digits))
                elif s in case["notes"]:
                    row.append("n/a " + footnote(case["notes"][s]))
                elif "note" in summary:
                    row.append("n/a " + footnote(summary["note"]))
                elif summary.get("errors"):
                    row.append("failed " + footnote(summary["errors"][0][:300]))
                else:
                    row.append("-")
            ratio_bits = [
                f"{out['systems'][p]['label']} {r[m.key]:.2f}x"
                for p, r in case["ratios"].items()
                if m.key in r
            ]
            row.append(", ".join(ratio_bits))
            rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for key, d in out.get("derived", {}).items():
        lines.append("ceiling: " + ceiling_line(key, d))
    lines += [f"[{i}] {text}" for i, text in enumerate(footnotes, start=1)]
    return "\n".join(lines)


def verdict(target: dict, words: dict[bool, str]) -> str:
    """met / not met, or why neither: not measured in this run, or measured and not judged
    (smaller than the target's size, or the server's settings; the value says which)."""
    if target["met"] is not None:
        return words[target["met"]]
    return "not measured" if target["number"] is None else "not judged"


def targets_table(items: list[dict]) -> str:
    lines = ["targets (issues 13, 24, 26):"]
    for t in items:
        mark = verdict(t, {True: "met", False: "NOT met"})
        lines.append(f"  [{mark:^12}] {t['target']}: {t['value']}")
    return "\n".join(lines)


def pg_settings(machine: dict) -> str:
    """The server settings that matter, the ones not at Postgres's default in bold."""
    return settings_text(machine.get("postgres_settings") or {})


def settings_text(found: dict) -> str:
    if not found:
        return "settings not recorded"
    return ", ".join(
        f"{name} {s['value']}" if s["default"] else f"**{name} {s['value']} (not the default)**"
        for name, s in found.items()
    )


def server_lines(out: dict) -> list[str]:
    """For each case that ran on a server of its own choosing: which, why, its settings."""
    return [
        f"- {case['title']}: on {server['where']}, because {server['why']}: Postgres "
        f"{server['postgres']}, {settings_text(server['settings'])}"
        for case in out["cases"].values()
        if (server := case.get("server"))
    ]


def markdown(out: dict, quick: bool) -> str:
    """The generated part of docs/benchmarks.md: machine, versions, table, targets."""
    m = out["machine"]
    lines = [
        f"Measured {out['started_at']} to {out['finished_at']} (UTC), mode `{out['mode']}`, "
        f"{out['runs']} run(s) per case unless the case says otherwise; command "
        f"`{out['command'].strip()}`.",
        "",
        f"- machine: {m['nproc']} CPUs ({m['cpu']}), {m['memory_gib']} GiB, Linux "
        f"{m['kernel']}, Python {m['python']}",
        f"- Postgres {m['postgres']} (local; {pg_settings(m)}), "
        f"{m['pgbench'] or 'no pgbench'}, {m['redis'] or 'no Redis'}, SQLite {m['sqlite']}",
        *server_lines(out),
    ]
    for info in (out["systems"][s] for s in ordered_systems(out)):
        state = info["version"] if info["available"] else f"unavailable: {info['error']}"
        lines.append(f"- {info['label']}: {state} — {info['defaults']}")
    systems = ordered_systems(out)
    lines += [
        "",
        "| metric | "
        + " | ".join(out["systems"][s]["label"] for s in systems)
        + " | taskq / peer (median of per-run ratios) |",
        "|---|" + "---:|" * len(systems) + "---|",
    ]
    footnotes: list[str] = []

    def footnote(text: str) -> str:
        if text not in footnotes:
            footnotes.append(text)
        return f"n/a [{footnotes.index(text) + 1}]"

    for cid, case in out["cases"].items():
        c = _BY_ID[cid]
        for metric in c.metrics_for(quick):
            better = "" if metric.higher_is_better else ", lower is better"
            cells = []
            for s in systems:
                summary = case["summary"].get(s, {})
                if s not in case["summary"] and s not in case["notes"]:
                    cells.append("")
                elif metric.key in summary:
                    cells.append(_fmt(summary[metric.key], metric.digits))
                elif s in case["notes"]:
                    cells.append(footnote(case["notes"][s]))
                elif "note" in summary:
                    cells.append(footnote(summary["note"]))
                elif summary.get("errors"):
                    cells.append(footnote("failed: " + summary["errors"][0][:300]))
                else:
                    cells.append("-")
            ratio = ", ".join(
                f"{out['systems'][p]['label']} {r[metric.key]:.2f}x"
                for p, r in case["ratios"].items()
                if metric.key in r
            )
            runs = case["runs"]
            label = f"{metric.label} ({metric.unit}{better})" + (
                "" if runs == out["runs"] else f", {runs} run"
            )
            lines.append(f"| {label} | " + " | ".join(cells) + f" | {ratio} |")
    for text_i, text in enumerate(footnotes, start=1):
        lines.append("")
        lines.append(f"[{text_i}] {text}")
    if out.get("derived"):
        lines.append("")
        for key, d in out["derived"].items():
            lines.append("- ceiling: " + ceiling_line(key, d))
    lines += ["", "| target (issues 13, 24, 26) | this run | met? |", "|---|---|---|"]
    for t in out["targets"]:
        mark = verdict(t, {True: "yes", False: "**no**"})
        lines.append(f"| {t['target']} | {t['value']} | {mark} |")
    return "\n".join(lines)
