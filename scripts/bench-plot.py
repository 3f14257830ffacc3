#!/usr/bin/env python3
"""Collects the results of scripts/bench-suite.sh and draws them.

usage: bench-plot.py LOG_DIR OUT_DIR

Reads LOG_DIR/NAME.log (one per benchmark): every line that is a JSON object is one
measurement; bench-clock's "name  value unit" lines become measurements too. Writes
OUT_DIR/results.json ({"machine", "date", "results": [..., each with "source": NAME]})
and one PNG a benchmark that ran (engines.png, pipelines.png, mlx5.png, emu-rate.png, emu-queues.png,
flow-change.png, latency.png (emu and afpacket), clock.png, afpacket-rx.png), and prints the files it wrote.
"""
import json
import os
import platform
import re
import statistics
import sys
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CLOCK_LINE = re.compile(r"^(\S+)\s+([0-9.]+) (ns/buffer|samples)$")


def read_logs(log_dir):
    results = []
    for name in sorted(os.listdir(log_dir)):
        if not name.endswith(".log"):
            continue
        source = name[: -len(".log")]
        with open(os.path.join(log_dir, name), encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                obj = None
                if line.startswith("{"):
                    try:
                        obj = json.loads(line)
                    except ValueError:
                        obj = None
                elif source == "clock":
                    m = CLOCK_LINE.match(line)
                    if m:
                        obj = {"bench": "clock", "name": m.group(1), "value": float(m.group(2)),
                               "unit": m.group(3)}
                if isinstance(obj, dict):
                    obj["source"] = source
                    results.append(obj)
    return results


def machine():
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release(),
            "python": platform.python_version()}


def bars(ax, groups, series, values, xlabel, ylabel, title, log=False):
    """Grouped bars: one group per entry of `groups`, one bar per series; values[s][g]
    (None: no bar); a log scale of the values if `log`."""
    width = 0.8 / max(len(series), 1)
    for i, s in enumerate(series):
        xs, ys = [], []
        for j, g in enumerate(groups):
            v = values[s].get(g)
            if v is not None:
                xs.append(j + (i - (len(series) - 1) / 2) * width)
                ys.append(v)
        rects = ax.bar(xs, ys, width, label=s)
        ax.bar_label(rects, fmt="%.1f", fontsize=7, padding=1)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([str(g) for g in groups])
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    if log:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)


def median_bars(ax, rows, field, value, fmt, ylabel):
    """One bar per value of rows' `field` (in order of appearance): the median of value(row)."""
    kinds = []
    for r in rows:
        if r[field] not in kinds:
            kinds.append(r[field])
    med = [statistics.median(value(r) for r in rows if r[field] == k) for k in kinds]
    rects = ax.bar(kinds, med)
    ax.bar_label(rects, fmt=fmt, fontsize=8)
    ax.set_ylabel(ylabel)


def grouped(rows, series_of, group_of, value_of):
    """For bars(): the groups (sorted), the series (mlx5 first, then by name) and
    values[series][group], the median of value_of over the rows of each pair."""
    groups = sorted({group_of(r) for r in rows})
    series = sorted({series_of(r) for r in rows}, key=lambda s: (not s.startswith("mlx5"), s))
    values = {s: {} for s in series}
    for s in series:
        for g in groups:
            vs = [value_of(r) for r in rows if series_of(r) == s and group_of(r) == g]
            if vs:
                values[s][g] = statistics.median(vs)
    return groups, series, values


def save(fig, out_dir, name, written):
    path = os.path.join(out_dir, name)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    written.append(path)


def plot_engines(rows):
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, direction, word in zip(axes, ("rx", "tx"), ("received", "sent")):
        # huge pages are DPDK's: mlx5 ran in both runs, once is enough
        sel = [r for r in rows if r["dir"] == direction and
               (r["source"] != "engines-huge" or r["engine"].startswith("dpdk"))]
        frames, series, values = grouped(
            sel, lambda r: r["engine"] + (" (huge pages)" if r.get("huge") else ""),
            lambda r: r["frame"], lambda r: r["median"])
        bars(ax, frames, series, values, "frame bytes", "host ns per packet (median, log scale)",
             f"engine API, one thread: per packet {word}", log=True)
    return fig


def plot_mlx5(rows):
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(rows) + 1.2))
    names = [f'{r["bench"][5:]} ({r.get("frame", "")} B)' for r in rows]
    ax.barh(names, [r["median"] for r in rows])
    for i, r in enumerate(rows):
        ax.text(r["median"], i, f' {r["median"]:.1f}', va="center", fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("host ns per packet (median of rounds)")
    ax.set_title("mlx5 rings on the emulated ConnectX (bench-mlx5)")
    return fig


def plot_emu_rate(rows):
    fig, ax = plt.subplots(figsize=(7, 3.5))
    median_bars(ax, rows, "run", lambda r: r["received_pps"] / 1e6, "%.1f",
                "Mpps received (median)")
    ax.set_title("daqirisrc ! fakesink on the emulated ConnectX (bench-emu-rate)")
    return fig


def plot_emu_queues(rows):
    def series(r):
        elements, cores = r.get("elements", 1), r.get("cores", 1)
        return (f'{elements} element{"s" if elements > 1 else ""}, '
                f'{cores} core{"s" if cores > 1 else ""}')

    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for ax, key, scale, ylabel in (
            (axes[0], "host_pps", 1e-6, "host Mpps (median)"),
            (axes[1], "src_cpu_ns_per_packet", 1, "CPU ns per packet (median)")):
        queues, names, values = grouped(rows, series, lambda r: r["queues"],
                                        lambda r, k=key, f=scale: r[k] * f)
        bars(ax, queues, names, values, "queues", ylabel,
             "draining one emulated port (bench-emu-queues)")
    return fig


def plot_flow_change(rows):
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    for ax, key, label in zip(axes, ("mpps", "lost"), ("Mpps", "packets lost")):
        median_bars(ax, rows, "mode", lambda r, k=key: r[k], "%.1f" if key == "mpps" else "%d",
                    f"{label} (median)")
    axes[0].set_title("flow-rule changes under full load (bench-flow-change)")
    return fig


def plot_clock(rows):
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(rows) + 1.2))
    ax.barh([r["name"] for r in rows], [r["value"] for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("ns per buffer")
    ax.set_title("daqirisrc's time code per buffer (bench-clock)")
    return fig


def plot_pipelines(rows):
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for ax, direction, what in zip(axes, ("rx", "tx"),
                                   ("daqirisrc ! fakesink", "daqiritestsrc ! daqirisink")):
        sel = [r for r in rows if r["dir"] == direction and r.get("burst", 256) == 256]
        frames, series, values = grouped(sel, lambda r: r["engine"], lambda r: r["frame"],
                                         lambda r: r["cpu_ns_per_packet"])
        bars(ax, frames, series, values, "frame bytes", "host ns per packet (median)",
             what + ", bursts of 256")
    sweep = [r for r in rows if r["dir"] == "rx" and r["frame"] == 64]
    ax = axes[2]
    for e in sorted({r["engine"] for r in sweep}, key=lambda e: (not e.startswith("mlx5"), e)):
        bursts = sorted({r["burst"] for r in sweep if r["engine"] == e})
        ys = [statistics.median(r["cpu_ns_per_packet"] for r in sweep
                                if r["engine"] == e and r["burst"] == b) for b in bursts]
        ax.plot(bursts, ys, marker="o", label=e)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("burst-packets")
    ax.set_ylabel("host ns per packet (median)")
    ax.set_title("daqirisrc ! fakesink, 64 B, by burst size")
    ax.legend(fontsize=8)
    return fig


def plot_latency(rows):
    devices = [d for d in ("emu", "afpacket") if any(r.get("device", "emu") == d for r in rows)]
    fig, axes = plt.subplots(len(devices), 1, figsize=(10, 4 * len(devices)), squeeze=False)
    series = ["p50", "p99", "max", "hand-over p99"]
    keys = {"p50": "p50_us", "p99": "p99_us", "max": "max_us", "hand-over p99": "handover_p99_us"}
    for ax, device in zip(axes[:, 0], devices):
        sel = [r for r in rows if r.get("device", "emu") == device]
        groups = [f'{r["rate"] // 1000} k/s, {r["burst_timeout_us"]:.0f} us' for r in sel]
        values = {s: {g: r[keys[s]] for g, r in zip(groups, sel)} for s in series}
        what = "the emulated ConnectX" if device == "emu" else "afpacket over veth"
        bars(ax, groups, series, values, "packets/s asked, burst-timeout", "us (log scale)",
             f"port time to sink on {what} (bench-latency)", log=True)
    return fig


def plot_afpacket(rows):
    payloads, series, values = grouped(rows, lambda r: r["receiver"],
                                       lambda r: r["payload_bytes"],
                                       lambda r: r["cpu_ns_per_packet"])
    fig, ax = plt.subplots(figsize=(8, 4))
    bars(ax, payloads, series, values, "UDP payload bytes",
         "CPU ns per received packet (median, log scale)", "receiving over a veth pair (bench-rx)",
         log=True)
    return fig


# The plots, in the order they are written: the file, which results it draws, and the
# function that draws them into a figure (a plot without results is not drawn).
PLOTS = (
    ("engines.png", lambda r: r.get("bench") == "engines" and "median" in r, plot_engines),
    ("pipelines.png", lambda r: r.get("bench") == "pipelines" and "cpu_ns_per_packet" in r,
     plot_pipelines),
    ("mlx5.png", lambda r: str(r.get("bench", "")).startswith("mlx5-") and "median" in r,
     plot_mlx5),
    ("emu-rate.png", lambda r: r.get("bench") == "emu-rate" and "received_pps" in r,
     plot_emu_rate),
    ("emu-queues.png", lambda r: r.get("bench") == "emu-queues" and "host_pps" in r,
     plot_emu_queues),
    ("flow-change.png", lambda r: r.get("bench") == "flow-change" and "mpps" in r,
     plot_flow_change),
    ("latency.png", lambda r: r.get("bench") == "latency" and "p99_us" in r, plot_latency),
    ("clock.png", lambda r: r.get("bench") == "clock" and r.get("unit") == "ns/buffer",
     plot_clock),
    ("afpacket-rx.png",
     lambda r: r.get("source") == "afpacket-rx" and "cpu_ns_per_packet" in r, plot_afpacket),
)


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    log_dir, out_dir = sys.argv[1], sys.argv[2]
    res = read_logs(log_dir)
    os.makedirs(out_dir, exist_ok=True)
    written = []
    with open(os.path.join(out_dir, "results.json"), "w", encoding="utf-8") as f:
        json.dump({"machine": machine(), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   "results": res}, f, indent=1)
    written.append(os.path.join(out_dir, "results.json"))
    for name, keep, draw in PLOTS:
        rows = [r for r in res if keep(r)]
        if rows:
            save(draw(rows), out_dir, name, written)
    for path in written:
        print(f"bench-plot: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
