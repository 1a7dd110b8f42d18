#!/usr/bin/python3
"""Compare eidolon's simulated NCCL collectives with real nccl-tests logs.

For every nccl-tests log in ../shared/validation-data (nccl-*.yaml), run collective-bench under
`eidolon run` with the log's collective, GPU count, nodes, datatype, size range and launch mode,
parse its table and write

    validation/results/nccl-validation.md    per log: size, measured and simulated busbw, relative
                                             error; mean/max |error| for sizes >= 1 MiB and < 1 MiB
    validation/results/nccl-validation.png   simulated vs measured busbw, one panel per log

See validation/README.md. Run with /usr/bin/python3 (needs PyYAML and matplotlib).
"""

import argparse
import math
import os
import re
import shlex
import subprocess
import sys
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DEFAULT_DATA = os.path.normpath(os.path.join(REPO, "..", "shared", "validation-data"))
TOPO = os.path.join(REPO, "topologies", "validation")
MiB = 1 << 20
GiB = 1 << 30

# ----------------------------------------------------------------------------- run configurations
#
# One entry per nccl-tests log: the cluster (topology, nodes, GPUs per node), how the processes
# were launched ("gpu": one process per GPU as mpirun/srun with -g 1; "node": one process driving
# all GPUs of the node as -g 8), the command line of the log, and which measured column it is
# compared with. Logs that are not size sweeps list their runs and points explicitly.


def sweep(topology, nodes, gpn, launch, coll, args, column="oop", env=None, nccl=None, note=None):
    """A log whose rows are a size sweep of one nccl-tests run."""
    return {
        "kind": "sweep",
        "topology": topology,
        "nodes": nodes,
        "gpus_per_node": gpn,
        "launch": launch,
        "column": column,
        "nccl_version": nccl,
        "note": note,
        "runs": [{"name": "run", "collective": coll, "args": args, "env": env or {}}],
    }


VP_ARGS = ["-b", "8", "-e", "8G", "-f", "2", "-g", "1", "-w", "1", "-n", "20"]
VP_TOPO = "voltagepark-h100-4node.yaml"
XX_ARGS = ["-b", "32M", "-e", "16G", "-f", "2", "-g", "1", "-w", "5", "-n", "20", "-d", "double"]
XX_TOPO = "xxrjun-cluster01-h100-1node.yaml"
AZ_ARGS = ["-b", "8", "-e", "8G", "-f", "2", "-g", "8", "-n", "40"]


def nvls_sweep(topology, nccl):
    """ml-engineering's all_reduce 8 GiB on 4..8 GPUs of one node, default and NVLS disabled."""
    runs, points = [], []
    for n in range(4, 9):
        for variant, env, field in (("default", {}, "busbw_gbps_default"),
                                    ("nvls0", {"NCCL_NVLS_ENABLE": "0"}, "busbw_gbps_nvls_disabled")):
            name = "%s-%dgpu" % (variant, n)
            runs.append({"name": name, "collective": "all_reduce",
                         "args": ["-b", "8G", "-e", "8G", "-g", str(n)], "env": env,
                         "gpus_per_node": n})
            points.append({"series": "NCCL default" if variant == "default" else "NCCL_NVLS_ENABLE=0",
                           "x": n, "label": "%d GPUs" % n, "size": 8 * GiB, "run": name,
                           "column": "oop", "row": {"gpus": n}, "field": field})
    return {"kind": "points", "xlabel": "GPUs (8 GiB all_reduce)", "xscale": "linear",
            "topology": topology, "nodes": 1, "gpus_per_node": 8, "launch": "node",
            "nccl_version": nccl, "runs": runs, "points": points,
            "note": "launch mode not stated in the source; one process driving N GPUs (-g N) assumed"}


def collectives_16gib():
    runs, points = [], []
    base = ["-b", "16G", "-e", "16G", "-g", "8", "-z", "1"]
    spec = [("all-reduce, NCCL_NVLS_ENABLE=1", "ar-nvls", "all_reduce", {"NCCL_NVLS_ENABLE": "1"}),
            ("all-reduce, NCCL_NVLS_ENABLE=0", "ar-ring", "all_reduce", {"NCCL_NVLS_ENABLE": "0"}),
            ("all-gather", "all-gather", "all_gather", {}),
            ("reduce-scatter", "reduce-scatter", "reduce_scatter", {})]
    for i, (label, name, coll, env) in enumerate(spec):
        runs.append({"name": name, "collective": coll, "args": base, "env": env})
        points.append({"series": "16 GiB", "x": i, "label": label, "size": 16 * GiB, "run": name,
                       "column": "oop", "row": {"collective": label}, "field": "busbw_gbps"})
    return {"kind": "points", "xlabel": "collective (16 GiB)", "xscale": "category",
            "topology": "mlengineering-h200-1node.yaml", "nodes": 1, "gpus_per_node": 8,
            "launch": "node", "nccl_version": "2.27.7", "runs": runs, "points": points,
            "note": "out-of-place/in-place not stated in the source; out-of-place compared"}


CONFIGS = {
    "nccl-allreduce-voltagepark-h100-4node":
        sweep(VP_TOPO, 4, 8, "gpu", "all_reduce", VP_ARGS, nccl="2.24.3"),
    "nccl-allgather-voltagepark-h100-4node":
        sweep(VP_TOPO, 4, 8, "gpu", "all_gather", VP_ARGS, nccl="2.24.3",
              note="rows of size 0 (fewer elements than ranks) are not compared"),
    "nccl-broadcast-voltagepark-h100-4node":
        sweep(VP_TOPO, 4, 8, "gpu", "broadcast", VP_ARGS + ["-r", "0"], nccl="2.24.3"),
    "nccl-reduce-voltagepark-h100-4node":
        sweep(VP_TOPO, 4, 8, "gpu", "reduce", VP_ARGS + ["-r", "0"], nccl="2.24.3"),
    "nccl-allreduce-xxrjun-h100-1node": sweep(XX_TOPO, 1, 8, "gpu", "all_reduce", XX_ARGS, nccl="2.29.2"),
    "nccl-allgather-xxrjun-h100-1node": sweep(XX_TOPO, 1, 8, "gpu", "all_gather", XX_ARGS, nccl="2.29.2"),
    "nccl-reducescatter-xxrjun-h100-1node":
        sweep(XX_TOPO, 1, 8, "gpu", "reduce_scatter", XX_ARGS, nccl="2.29.2"),
    "nccl-alltoall-xxrjun-h100-1node": sweep(XX_TOPO, 1, 8, "gpu", "alltoall", XX_ARGS, nccl="2.29.2"),
    "nccl-sendrecv-xxrjun-h100-1node": sweep(XX_TOPO, 1, 8, "gpu", "sendrecv", XX_ARGS, nccl="2.29.2"),
    "nccl-allreduce-azure-nda100v4-1node":
        sweep("azure-nda100v4-1node.yaml", 1, 8, "node", "all_reduce", AZ_ARGS, column="ip",
              nccl="2.18.5",
              note="the page claims NVLS, impossible on A100: NCCL_ALGO is left unset"),
    "nccl-allreduce-azure-ndh100v5-1node":
        sweep("azure-ndh100v5-1node.yaml", 1, 8, "node", "all_reduce", AZ_ARGS, column="ip",
              env={"NCCL_ALGO": "NVLS"}, nccl="2.18.5"),
    "nccl-allreduce-azure-ndh200v5-1node":
        sweep("azure-ndh200v5-1node.yaml", 1, 8, "node", "all_reduce", AZ_ARGS, column="ip",
              env={"NCCL_ALGO": "NVLS"}, nccl="2.20.5"),
    "nccl-allreduce-mlengineering-a100-1node":
        sweep("mlengineering-a100-1node.yaml", 1, 8, "node", "all_reduce",
              ["-b", "32K", "-e", "16G", "-f", "2", "-g", "8", "-n", "50"], nccl=None),
    "nccl-collectives-16gib-mlengineering-h200": collectives_16gib(),
    "nccl-nvls-vs-ring-mlengineering-h200": nvls_sweep("mlengineering-h200-1node.yaml", "2.27.7"),
    "nccl-nvls-vs-ring-mlengineering-b200": nvls_sweep("mlengineering-b200-1node.yaml", "2.27.7"),
}

SKIPPED = {
    "torch-allreduce-mlengineering-h200-1node":
        "torch.distributed timing loop, not nccl-tests (own overheads, datatype not stated)",
}

# ----------------------------------------------------------------------------- nccl-tests output

TYPES = ("int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double",
         "bfloat16", "char", "int", "fp8_e4m3", "fp8_e5m2", "f8e4m3", "f8e5m2")
ROW_START = re.compile(r"(?:^|[\s:\]>|])(\d+)\s+(\d+)\s+(%s)(?=\s)" % "|".join(TYPES))
NUM = re.compile(r"^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


def _num(tok):
    return float(tok) if NUM.match(tok) else None


def parse_nccl_tests(text):
    """Parse an nccl-tests (or collective-bench) output: header facts and the result rows.

    Tolerates a per-line prefix (a launcher's "[rank0]: "), old layouts without the redop/root
    columns, "N/A" in #wrong, and rows with only one time/algbw/busbw/#wrong group.
    Returns {"collective", "nranks", "rows": [{size, count, type, redop, root, oop, ip}],
    "avg_busbw", "oob"}; each of oop/ip is {time_us, algbw, busbw, wrong} or None.
    """
    out = {"collective": None, "nranks": 0, "rows": [], "avg_busbw": None, "oob": None}
    ranks = set()
    for raw in text.splitlines():
        line = raw.rstrip()
        m = re.search(r"# Collective test starting: (\S+)", line)
        if m:
            out["collective"] = m.group(1)
            continue
        m = re.search(r"#\s+Rank\s+(\d+)\s+Group", line)
        if m:
            ranks.add(int(m.group(1)))
            continue
        m = re.search(r"# Avg bus bandwidth\s*:\s*(\S+)", line)
        if m:
            out["avg_busbw"] = _num(m.group(1))
            continue
        m = re.search(r"# Out of bounds values\s*:\s*(\d+)", line)
        if m:
            out["oob"] = int(m.group(1))
            continue
        m = ROW_START.search(line)
        if not m or "#" in line[: m.start() + 1]:
            continue
        toks = line[m.end():].split()
        groups = []
        tail = toks
        # From the end: groups of (time, algbw, busbw, #wrong).
        while len(tail) >= 4 and all(_num(t) is not None for t in tail[-4:-1]) and \
                (_num(tail[-1]) is not None or tail[-1] == "N/A"):
            t, a, b, w = tail[-4:]
            groups.insert(0, {"time_us": float(t), "algbw": float(a), "busbw": float(b),
                              "wrong": None if w == "N/A" else float(w)})
            tail = tail[:-4]
            if len(groups) == 2:
                break
        if not groups:
            continue
        redop, root = None, None
        for t in tail:
            if _num(t) is None:
                redop = t
            elif re.match(r"^-?\d+$", t):
                root = int(t)
        out["rows"].append({
            "size": int(m.group(1)), "count": int(m.group(2)), "type": m.group(3),
            "redop": redop, "root": root,
            "oop": groups[0], "ip": groups[1] if len(groups) > 1 else None,
        })
    out["nranks"] = len(ranks)
    return out


def find_table(run_dir, stdout_text):
    """The parsed table of a run: from what `eidolon run` printed, else from rank 0's output file."""
    parsed = parse_nccl_tests(stdout_text or "")
    if parsed["rows"]:
        return parsed, "stdout"
    candidates = []
    for root, _, files in os.walk(run_dir):
        for f in files:
            path = os.path.join(root, f)
            try:
                if os.path.getsize(path) > 64 * MiB:
                    continue
                with open(path, errors="replace") as fh:
                    text = fh.read()
            except OSError:
                continue
            if "Collective test starting" in text or "out-of-place" in text:
                rank0 = bool(re.search(r"(rank|r)[-_.]?0+(\D|$)", os.path.relpath(path, run_dir)))
                candidates.append((not rank0, path, text))
    for _, path, text in sorted(candidates):
        parsed = parse_nccl_tests(text)
        if parsed["rows"]:
            return parsed, os.path.relpath(path, run_dir)
    return parsed, None


# ----------------------------------------------------------------------------- sizes and commands

def parse_size(text):
    """nccl-tests' -b/-e syntax: number with optional K/M/G (powers of 1024)."""
    m = re.match(r"^\s*([0-9.]+)\s*([kKmMgGtT]?)", str(text))
    if not m:
        raise ValueError("bad size %r" % text)
    unit = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    return int(float(m.group(1)) * unit)


def arg_value(args, flag):
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return args[i + 1]
    return None


def with_arg(args, flag, value):
    out = list(args)
    for i, a in enumerate(out):
        if a == flag and i + 1 < len(out):
            out[i + 1] = value
            return out
    return out + [flag, value]


def capped_args(args, sizes_max):
    """The run's arguments with -e capped; None when even -b is above the cap."""
    if sizes_max is None:
        return args
    b = parse_size(arg_value(args, "-b") or "32M")
    e = parse_size(arg_value(args, "-e") or "32M")
    if b > sizes_max:
        return None
    if e > sizes_max:
        args = with_arg(args, "-e", str(sizes_max))
    return args


NCCL_VERSION_RE = re.compile(r"(?:NCCL version\s+|nccl-library=|^|[^\d.])(2\.\d{1,2}(?:\.\d{1,2})?)")
NCCL_CODE_RE = re.compile(r"nccl-library=(2\d{4})")
DEFAULT_NCCL = "2.30.7"


def log_nccl_version(log, cfg):
    """The NCCL release the log was taken with, as (version, where it came from).

    In order: the line NCCL prints at start-up ("NCCL version 2.x.y") or nccl-tests' header
    (nccl-library=2xxyy) in the log's raw text, the log's software.nccl_version, the script's own
    record of it; None where no source states it (the model's default release is then used)."""
    raw = "\n".join(str(log.get(k, "")) for k in ("raw", "raw_output", "output", "log"))
    m = re.search(r"NCCL version\s+(2\.\d{1,2}\.\d{1,2})", raw)
    if m:
        return m.group(1), "the log's 'NCCL version' line"
    m = NCCL_CODE_RE.search(raw)
    if m:
        code = int(m.group(1))
        return "%d.%d.%d" % (code // 10000, code // 100 % 100, code % 100), "nccl-library="
    stated = str((log.get("software") or {}).get("nccl_version") or "")
    m = NCCL_VERSION_RE.search(stated)
    if m:
        return m.group(1), "software.nccl_version"
    if cfg.get("nccl_version"):
        return cfg["nccl_version"], "this script"
    return None, "not stated"


def build_command(opts, cfg, run, run_dir, args):
    gpn = run.get("gpus_per_node", cfg["gpus_per_node"])
    version = cfg.get("emulated_nccl")
    return ([opts.eidolon, "run", "--topology", os.path.join(TOPO, cfg["topology"]),
             "--nodes", str(cfg["nodes"]), "--gpus-per-node", str(gpn),
             "--launch", cfg["launch"], "--model", opts.model, "--out", run_dir]
            + (["--nccl-version", version] if version else []) + ["--"]
            + [opts.bench, run["collective"]] + list(args))


def shell_line(env, cmd, relative=False):
    """The command as a shell line; `relative`: paths inside the repository shown relative to it."""
    def show(c):
        if relative and c.startswith(REPO + os.sep):
            c = os.path.relpath(c, REPO)
        return shlex.quote(c)
    prefix = " ".join("%s=%s" % (k, shlex.quote(v)) for k, v in sorted(env.items()))
    return (prefix + " " if prefix else "") + " ".join(show(c) for c in cmd)


def eidolon_revision():
    try:
        out = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             universal_newlines=True, timeout=30)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


# ----------------------------------------------------------------------------- comparison

def bus_factor(collective, nranks):
    """nccl-tests' busbw / algbw."""
    n = float(nranks)
    c = collective.replace("_perf", "").replace("_", "").replace("-", "").lower()
    if c == "allreduce":
        return 2 * (n - 1) / n
    if c in ("allgather", "reducescatter", "alltoall"):
        return (n - 1) / n
    return 1.0


def busbw_from_time(size, time_us, collective, nranks):
    """busbw as nccl-tests computes it (algbw = size / time), unrounded."""
    if not size or not time_us or time_us <= 0:
        return None
    return size / (time_us * 1e3) * bus_factor(collective, nranks)


def measured_points(log, cfg, sizes_max):
    """(x, label, size, measured busbw, run, column, series) for every comparable row.

    Where the log has times, busbw is recomputed from size / time (nccl-tests' own formula): the
    printed busbw has two decimals, which is no precision at all for small sizes (0.01 GB/s)."""
    pts = []
    if cfg["kind"] == "sweep":
        run = cfg["runs"][0]
        nranks = cfg["nodes"] * run.get("gpus_per_node", cfg["gpus_per_node"])
        for r in log.get("rows", []):
            size, bw = r.get("size_bytes"), r.get("busbw_gbps")
            if not size or bw is None:
                continue  # empty collectives (size 0) carry no signal
            if sizes_max is not None and size > sizes_max:
                continue
            precise = busbw_from_time(size, r.get("time_us"), run["collective"], nranks)
            bw = precise if precise is not None else float(bw)
            if bw <= 0:
                continue
            pts.append({"x": size, "label": human(size), "size": size, "measured": bw,
                        "run": run["name"], "column": cfg["column"], "series": "busbw",
                        "collective": run["collective"], "nranks": nranks})
        return pts
    rows = log.get("rows", [])
    for p in cfg["points"]:
        if sizes_max is not None and p["size"] > sizes_max:
            continue
        match = [r for r in rows if all(r.get(k) == v for k, v in p["row"].items())]
        if not match or match[0].get(p["field"]) is None:
            continue
        q = dict(p)
        q["measured"] = float(match[0][p["field"]])
        pts.append(q)
    return pts


def human(size):
    for unit, name in ((1 << 40, "TiB"), (GiB, "GiB"), (MiB, "MiB"), (1 << 10, "KiB")):
        if size >= unit and size % unit == 0:
            return "%d %s" % (size // unit, name)
    return "%d B" % size


def attach_simulated(points, tables):
    for p in points:
        p["simulated"] = None
        t = tables.get(p["run"])
        if not t:
            continue
        rows = [r for r in t["rows"] if r["size"] == p["size"]]
        if not rows:
            continue
        col = rows[0]["ip"] if p["column"] == "ip" else rows[0]["oop"]
        if col is not None:
            precise = None
            if p.get("collective"):
                precise = busbw_from_time(p["size"], col["time_us"], p["collective"], p["nranks"])
            p["simulated"] = precise if precise is not None else col["busbw"]
    for p in points:
        s, m = p.get("simulated"), p["measured"]
        p["error"] = (s - m) / m if (s is not None and m) else None


def stats(points):
    """mean and max |relative error| for sizes >= 1 MiB and < 1 MiB."""
    out = {}
    for key, pred in (("large", lambda p: p["size"] >= MiB), ("small", lambda p: p["size"] < MiB)):
        errs = [abs(p["error"]) for p in points if pred(p) and p.get("error") is not None]
        out[key] = {"n": len(errs), "mean": sum(errs) / len(errs) if errs else None,
                    "max": max(errs) if errs else None}
    return out


def pct(v, signed=False):
    if v is None:
        return "—"
    return ("%+.1f%%" if signed else "%.1f%%") % (100 * v)


def gbps(v):
    if v is None:
        return "—"
    return "%.2f" % v if v >= 1 else "%.3g" % v


# ----------------------------------------------------------------------------- the model's choice

# nccl-tests environment the sweep takes as flags.
SWEEP_FLAGS = {"NCCL_ALGO": "--algo", "NCCL_PROTO": "--proto", "NCCL_NVLS_ENABLE": "--nvls",
               "NCCL_MIN_NCHANNELS": "--minChannels", "NCCL_MAX_NCHANNELS": "--maxChannels",
               "NCCL_COLLNET_ENABLE": "--collnet"}
TYPE_BYTES = {"int8": 1, "uint8": 1, "char": 1, "half": 2, "bfloat16": 2, "float16": 2, "int32": 4,
              "uint32": 4, "float": 4, "float32": 4, "int64": 8, "uint64": 8, "double": 8}


def nccl_code(version):
    """'2.24.3' -> 22403 (NCCL's own encoding)."""
    parts = [int(x) for x in (version or DEFAULT_NCCL).split(".")] + [0, 0]
    return parts[0] * 10000 + parts[1] * 100 + parts[2]


def model_choices(opts, cfg, points):
    """size -> "Ring/LL x1": the algorithm, protocol and channels the model's NCCL selection gives
    each row's size on the log's cluster (eidolon-collective-sweep, one call of that size alone).
    Empty where the log is not a size sweep or the sweep is not built."""
    if cfg["kind"] != "sweep" or not points or not os.access(opts.sweep, os.X_OK):
        return {}
    run = cfg["runs"][0]
    sizes = sorted(p["size"] for p in points)
    type_bytes = TYPE_BYTES.get(arg_value(run["args"], "-d") or "float", 4)
    cmd = [opts.sweep, "--topology=" + os.path.join(TOPO, cfg["topology"]),
           "--collective=" + run["collective"], "--b=%d" % sizes[0], "--e=%d" % sizes[-1],
           "--nodes=%d" % cfg["nodes"], "--ppn=%d" % run.get("gpus_per_node", cfg["gpus_per_node"]),
           "--ncclVersion=%d" % nccl_code(cfg.get("emulated_nccl")), "--typeSize=%d" % type_bytes]
    # The run's environment as `eidolon run` gets it: --env, then the log's own settings.
    env = dict(getattr(opts, "extra_env", {}), **run.get("env", {}))
    for name, value in env.items():
        if name in SWEEP_FLAGS:
            cmd.append("%s=%s" % (SWEEP_FLAGS[name], value))
        elif name.startswith("NCCL_"):
            return {}  # a setting the sweep cannot take: no column rather than a wrong one
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    choices = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 4 and not line.startswith("#") and f[0].isdigit():
            choices[int(f[0])] = "%s/%s x%s" % (f[1], f[2], f[3])
    return choices


# ----------------------------------------------------------------------------- why a row is off

def _rule(logs, lo, hi, text, explained, sign=0, choice=None):
    """A finding about a log's rows: `logs` (substrings of log ids), sizes lo..hi, text."""
    return {"logs": (logs,) if isinstance(logs, str) else tuple(logs), "lo": lo, "hi": hi,
            "sign": sign, "choice": choice, "text": text, "explained": explained}


KiB = 1 << 10
VP = "voltagepark-h100-4node"
CM = "ns3-module/doc/collective-model.md"

# Why a row's |error| is above 10%: the first rule whose log (substring of the id), size range,
# sign of the error (+1 simulated faster, -1 slower, 0 either) and model choice (regex) match.
# `explained`: the cause is known (a mechanism the model lacks or approximates, a selection the
# measured run did not make); otherwise the row is reported UNEXPLAINED with what was found.
EXPLANATIONS = [
    # 4 x 8 H100, Voltage Park (nccl-tests -g 1, back to back).
    _rule(("nccl-broadcast-" + VP, "nccl-reduce-" + VP), 8, 4 * KiB,
          "the log's time an operation moves between 8 and 14 us from one size to the next "
          "(broadcast 8 B-4 KiB: 12.1, 10.9, 9.0, 9.4, 12.1, 9.9, 9.9, 13.5, 13.0, 13.7 us; "
          "reduce 8 B 10.9, 16 B 8.1 us), noise at the scale of a network message around the "
          "model's 10.1 us an operation (its chain period back to back, 9.3 us = 6.6 us kernel "
          "start + one 2.7 us network hop, and the chain's fill over the 20 operations, each rank "
          "timing from nccl-tests' barrier) (%s, \"Broadcast and Reduce chains\")" % CM, True),
    _rule(("nccl-allgather-" + VP, "nccl-allreduce-" + VP), 8, 16 * KiB,
          "the log's LL ring is 10-20%% slower than its longest chunk path (NCCL's per-hop "
          "figures, 44.4 us for AllGather on 4 x 8) at every size up to 16 KiB, like a per-step "
          "cost about a fifth above NCCL's figures; nothing in NCCL's code found gives it "
          "(%s, \"Rings across nodes\")" % CM, False, sign=+1, choice="Ring/LL"),
    _rule(VP, 8, 8 * KiB,
          "Tree/LL on one channel: the log is 3-4 us slower than NCCL's tree latency with the "
          "proxy's step reads up to 4 KiB, 8 us at 8 KiB: from 4 to 8 KiB the log adds 8.2 us, "
          "the model 4.7 (three held steps read at 3.0 GB/s), as if the proxy read the steps at "
          "half that rate; 8 KiB is also where the tree's LL message (16 KiB of lines) first "
          "passes NCCL_IB_AR_THRESHOLD (8 KiB) (%s, \"Trees across nodes with LL128\")" % CM,
          False, sign=+1,
          choice="Tree/LL x1"),
    _rule(VP, 16 * KiB, 128 * KiB,
          "8 KiB a channel on 2-8 channels (NCCL 2.24's scheduler: one channel per 16 KiB of an "
          "AllReduce's traffic, twice its bytes): the log takes 56-60 us against its 53 us on one "
          "channel, the model 45-50 against 45: what is left is the one-channel gap at 8 KiB "
          "(the proxy's reads of the held steps, above), and 3-7 us that more channels cost the "
          "log; nothing per channel found accounts for those (%s, \"Trees across nodes with "
          "LL128\")" % CM, False, sign=+1, choice="Tree/LL x([2-9]|1[0-9])"),
    _rule(VP, 8 * KiB, 32 * KiB,
          "one channel with NCCL's reduced thread count (96-128 threads): the model scales the "
          "CTA's rate with its threads; the log's rate at 96-128 threads is higher than that "
          "share (%s, \"Broadcast and Reduce chains\", Threads)" % CM, False, sign=+1,
          choice="Ring/LL x1"),
    _rule(VP, 256 * KiB, 512 * KiB,
          "an operation on 2-4 channels costs more in the log than one channel with the same "
          "bytes per channel (as the all_reduce log's Tree/LL rows); not found in NCCL's code",
          False, sign=+1, choice="Ring/LL x[2-4]"),
    _rule("nccl-broadcast-" + VP, MiB, MiB,
          "8 channels of 128 KiB back to back: the model's chains wrap the node boundaries at "
          "different ranks on every channel, so each rank waits for some chain's tail (132 us an "
          "operation); the log takes 115 us (%s, \"Broadcast and Reduce chains\")" % CM, False,
          sign=-1),
    _rule("nccl-broadcast-" + VP, 2 * MiB, 64 * MiB,
          "back to back, the model's 16-channel LL128 chains overlap by about 15%%, the log's not "
          "at all; one call alone is within 4%% from 2 to 64 MiB (%s, \"Broadcast and Reduce "
          "chains\")" % CM, True, sign=+1, choice="LL128"),
    _rule("nccl-allgather-" + VP, MiB, 2 * MiB,
          "110 us at both 1 and 2 MiB; two readings fit: LL on 8 and 16 channels of 128 KiB (not "
          "NCCL 2.24.3's choice: its estimate gives LL128 82.7 against LL 92.5 us at 1 MiB, and "
          "the model follows it), or LL128 at ~3.0 us a ring step against 5.5 from 4 MiB, where "
          "its wire messages (6 KiB at 2 MiB, 10 KiB at 4 MiB) cross NCCL_IB_AR_THRESHOLD (8 KiB: "
          "above it net_ib posts an adaptive-routing write and a separate write-with-immediate); "
          "a run with the threshold raised would tell (%s, \"Rings across nodes\")" % CM, False,
          sign=-1, choice="LL128"),
    _rule("nccl-allgather-" + VP, 4 * MiB, 64 * MiB,
          "LL128 ring floor: the log's 4-64 MiB rows fit 14 + 31 x (5.47 us + s / 18.9 GB/s) "
          "(s: a channel's bytes a ring step), the model 14 + 31 x (4.0 us + s / 16.1 GB/s): the "
          "streaming terms are close (NCCL's channel figure 18.35), the gap is ~1.5 us a step "
          "above NCCL's 4.0 us network hop; "
          "NCCL's code pipelines the ring (8-step windows, no per-message round trip), so some "
          "per-step occupancy (the proxy thread's passes or the exit rank's fence and barriers, "
          "unmeasured) takes ~5.5 us, from where LL128's wire messages pass NCCL_IB_AR_THRESHOLD "
          "(8 KiB) (%s, \"Rings across nodes\")" % CM, False, sign=+1,
          choice="LL128"),
    _rule("nccl-allreduce-" + VP, MiB, MiB,
          "Tree/LL128: the log's 512 KiB -> 1 MiB slope is 26 us/MiB against the model's 9 "
          "(NCCL's per-channel LL128 tree cap, 7.25 GB/s a CTA and direction) (%s, \"Trees "
          "across nodes with LL128\")" % CM, False, sign=+1),
    _rule("nccl-allreduce-" + VP, 2 * MiB, 2 * MiB,
          "NVLSTree: the log's 2 and 4 MiB rows take 155 and 160 us, nearly the same time, which "
          "no chunking rule of NCCL 2.24.3's NVLSTree gives; the raw log's in-place column took "
          "136.6 us at 2 MiB (+9%% against it): of the rows from 1 MiB up, the only one whose two "
          "columns differ by more than 2%% (12%%) (%s, \"Trees across nodes with LL128\")" % CM,
          False, sign=+1),
    _rule("nccl-allreduce-" + VP, 4 * MiB, 16 * MiB,
          "NVLSTree, 8-16 MiB slower than the log: the model charges the tree's pipeline fill (3 "
          "chunks over 4 network stages) at the steady NIC share of all stages, ~1.5 GB/s a "
          "flow; charging each stage at its own load instead would be far too fast (~156 us at "
          "8 MiB against 230); nothing found in between (%s, \"Trees across nodes with "
          "LL128\")" % CM, False, sign=-1, choice="NVLSTree"),
    # Single node, one process driving 8 GPUs (-g 8).
    _rule("azure-nd", 8, 2 * MiB,
          "host-bound: one process drives the 8 GPUs (-g 8), and each iteration pays the host "
          "description's NCCL cost per collective 8 times, 48 us (6.0 us, measured with NCCL "
          "2.28.3 on one GPU, grouped or not: 8 all-reduces in one group took 47.6 us), where "
          "the log's iteration takes 25-45 us; the per-call host cost of the log's NCCL (2.18.5, "
          "2.20.5) is not measured (%s, \"Small NVLS operations\")" % CM, True, sign=-1),
    _rule("mlengineering-a100", 8, 64 * KiB,
          "one process drives the 8 GPUs (-g 8): the host description's per-call costs paid "
          "8 times an iteration (%s, \"Small NVLS operations\")" % CM, True, sign=-1),
    _rule("a100", 128 * KiB, 256 * MiB,
          "A100, 8 GPUs of one node: from 256 KiB to 256 MiB both A100 logs take 10-400 us more "
          "than the model (LL and LL128 rings up to 16 MiB, Simple above), streaming well below "
          "the channel rates NCCL's tables give and the model uses; neither NCCL's hop figures "
          "nor its chunking account for it (%s, \"Single-node rings\", \"A100\")" % CM, False,
          sign=+1),
    _rule("azure-nd", 16 * MiB, 64 * MiB,
          "NVLS on one node approaching its plateau: the log's 32 MiB is 12-14% below the "
          "model's NVLS rate; not found in NCCL's NVLS chunking", False, sign=+1),
    _rule("allgather-xxrjun", 0, 64 * MiB,
          "Simple ring in one node at one loop (channels x ranks x 2 MiB): the approach to the "
          "plateau is faster in the model (%s, \"Single-node rings\")" % CM, False, sign=+1),
    _rule("alltoall-xxrjun", 0, 1 << 40,
          "NVLink all-to-all below NCCL's per-link figure: the log moves 300-311 GB/s with 28 "
          "CTAs of one work each at 128-512 MiB (sendrecv reaches 367 in the same cluster); "
          "nothing in NCCL's code accounts for it and the model does not invent a factor (%s, "
          "\"AllToAll\")" % CM, False, sign=+1),
]


def explain(lid, point, choice):
    """(explained, text) for a row whose |error| is above 10%; None for the others."""
    err = point.get("error")
    if err is None or abs(err) <= 0.10:
        return None
    sign = 1 if err > 0 else -1
    for r in EXPLANATIONS:
        if not any(k in lid for k in r["logs"]) or not r["lo"] <= point["size"] <= r["hi"]:
            continue
        if r["sign"] and r["sign"] != sign:
            continue
        if r["choice"] and not re.search(r["choice"], choice or ""):
            continue
        return r["explained"], r["text"]
    return False, "no finding recorded"


# ----------------------------------------------------------------------------- report

def write_markdown(path, results, opts, skipped):
    lines = ["# eidolon vs nccl-tests: bus bandwidth", "",
             "Written by `validation/run-nccl-validation.py` (%s). Measured: the logs in "
             "`../shared/validation-data`; simulated: `collective-bench` under `eidolon run` "
             "(model `%s`) on the topologies in `topologies/validation/`. Relative error = "
             "(simulated - measured) / measured; the summaries are over |error|. Where a log has "
             "times, both busbw columns are computed from size / time x the busbw factor, as "
             "nccl-tests does, instead of its two-decimal busbw (which is 0.00-0.01 GB/s at small "
             "sizes)."
             % (time.strftime("%Y-%m-%d %H:%M"), opts.model), ""]
    lines += ["eidolon revision: `%s` (`git describe --always --dirty`); extra environment: %s." % (
        eidolon_revision(),
        ", ".join("`%s=%s`" % kv for kv in sorted(getattr(opts, "extra_env", {}).items())) or "none"),
        ""]
    if opts.sizes_max is not None:
        lines += ["Sizes capped at %s (`--sizes-max`): larger measured rows are left out." %
                  human(opts.sizes_max), ""]
    all_points = [p for r in results for p in r["points"]]
    total = stats(all_points)
    lines += ["## Summary", "",
              "| log | points | >= 1 MiB: mean | max | < 1 MiB: mean | max | above 10%: explained "
              "/ not | status |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]

    def above(points):
        whys = [p["why"] for p in points if p.get("why")]
        return "%d / %d" % (sum(1 for w in whys if w[0]), sum(1 for w in whys if not w[0]))

    for r in results:
        s = stats(r["points"])
        n = sum(1 for p in r["points"] if p.get("error") is not None)
        lines.append("| %s | %d/%d | %s | %s | %s | %s | %s | %s |" % (
            r["id"], n, len(r["points"]), pct(s["large"]["mean"]), pct(s["large"]["max"]),
            pct(s["small"]["mean"]), pct(s["small"]["max"]), above(r["points"]), r["status"]))
    n = sum(1 for p in all_points if p.get("error") is not None)
    lines.append("| **all** | %d/%d | %s | %s | %s | %s | %s | |" % (
        n, len(all_points), pct(total["large"]["mean"]), pct(total["large"]["max"]),
        pct(total["small"]["mean"]), pct(total["small"]["max"]), above(all_points)))
    lines += ["", "Every row above 10% says why (the `why` column): a cause that is known (a "
              "mechanism the model lacks or approximates, a choice the measured run did not make "
              "as NCCL's default would, noise in the log), or UNEXPLAINED with what was found "
              "(`EXPLANATIONS` in the script; `ns3-module/doc/collective-model.md`). The model's "
              "choice is NCCL's selection in the model for the size alone "
              "(`eidolon-collective-sweep`): algorithm/protocol x channels."]
    lines.append("")
    if skipped:
        lines += ["Not compared:", ""]
        lines += ["- `%s`: %s" % (k, v) for k, v in skipped]
        lines.append("")
    for r in results:
        cfg, log = r["cfg"], r["log"]
        hw = log.get("hardware", {})
        sw = log.get("software", {})
        lines += ["## %s" % r["id"], "",
                  "- measured: %s, %s x %s (%s node(s)); NCCL %s; `%s`; column %s" % (
                      log.get("collective"), hw.get("gpu_count"), hw.get("gpu"), hw.get("nodes"),
                      sw.get("nccl_version", "?"), sw.get("command", "?"),
                      sw.get("column_used", "?")),
                  "- simulated: `topologies/validation/%s`, launch %s, compared column %s%s" % (
                      cfg["topology"], cfg["launch"],
                      "in-place" if cfg.get("column") == "ip" else "out-of-place",
                      ("; emulated NCCL %s (from %s)" % (cfg["emulated_nccl"], cfg["nccl_source"])
                       if cfg.get("emulated_nccl") else
                       "; emulated NCCL %s, the default (the log does not state its release)"
                       % DEFAULT_NCCL))]
        if cfg.get("note"):
            lines.append("- note: %s" % cfg["note"])
        for run in r["runs"]:
            lines.append("- run `%s`: %s%s" % (run["name"], run["status"],
                                               ("; `%s`" % run["command"]) if run.get("command") else ""))
        lines += ["", "| %s | measured busbw (GB/s) | simulated busbw (GB/s) | rel. error | "
                  "model's choice | why (\\|error\\| > 10%%) |" %
                  ("size" if cfg["kind"] == "sweep" else "point"),
                  "| --- | ---: | ---: | ---: | --- | --- |"]
        for p in r["points"]:
            label = p["label"] if cfg["kind"] == "sweep" else "%s, %s" % (p["series"], p["label"])
            why = p.get("why")
            lines.append("| %s | %s | %s | %s | %s | %s |" % (
                label, gbps(p["measured"]), gbps(p.get("simulated")),
                pct(p.get("error"), signed=True), p.get("choice") or "",
                "" if why is None else why[1] if why[0] else "UNEXPLAINED: " + why[1]))
        s = stats(r["points"])
        lines += ["", "|error|: sizes >= 1 MiB mean %s, max %s (%d points); < 1 MiB mean %s, max %s "
                  "(%d points)." % (pct(s["large"]["mean"]), pct(s["large"]["max"]), s["large"]["n"],
                                    pct(s["small"]["mean"]), pct(s["small"]["max"]), s["small"]["n"]),
                  ""]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines))


def write_plot(path, results):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        # The table is written; say why the plot is not (run as ./validation/..., the shebang's
        # /usr/bin/python3 has Debian's python3-matplotlib).
        print(f"matplotlib not available to {sys.executable}: {path} not written "
              "(run with /usr/bin/python3 and Debian's python3-matplotlib)")
        return False

    n = len(results)
    if n == 0:
        return False
    cols = 3 if n > 4 else (2 if n > 1 else 1)
    rows = int(math.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.8 * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.axis("off")
    for ax, r in zip(axes.flat, results):
        cfg = r["cfg"]
        series = []
        for p in r["points"]:
            if p["series"] not in series:
                series.append(p["series"])
        for i, name in enumerate(series):
            pts = [p for p in r["points"] if p["series"] == name]
            color = "C%d" % i
            lab = "" if name == "busbw" else name + ": "
            ax.plot([p["x"] for p in pts], [p["measured"] for p in pts], "o-", color=color,
                    label=lab + "measured", markersize=3)
            sim = [p for p in pts if p.get("simulated") is not None]
            if sim:
                ax.plot([p["x"] for p in sim], [p["simulated"] for p in sim], "s--", color=color,
                        label=lab + "simulated", markersize=3, alpha=0.8)
        if cfg["kind"] == "sweep":
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("size (bytes)")
        else:
            ax.set_xlabel(cfg.get("xlabel", ""))
            if cfg.get("xscale") == "category":
                xs = sorted({p["x"] for p in r["points"]})
                labels = {p["x"]: p["label"] for p in r["points"]}
                ax.set_xticks(xs)
                ax.set_xticklabels([labels[x] for x in xs], rotation=20, fontsize=6, ha="right")
        ax.set_ylabel("busbw (GB/s)")
        ax.set_title(r["id"], fontsize=7)
        ax.grid(True, alpha=0.3)
        if r["points"]:
            ax.legend(fontsize=6)
        else:
            ax.text(0.5, 0.5, "no points compared\n(%s)" % r["status"], ha="center", va="center",
                    transform=ax.transAxes, fontsize=7)
    fig.tight_layout()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# ----------------------------------------------------------------------------- main

def load_logs(data_dir, only):
    logs, skipped = [], []
    for f in sorted(os.listdir(data_dir)):
        if not f.endswith(".yaml"):
            continue
        with open(os.path.join(data_dir, f)) as fh:
            log = yaml.safe_load(fh)
        if not isinstance(log, dict):
            continue
        lid = log.get("id", f[:-5])
        if only and not any(o in lid for o in only):
            continue
        kind = str(log.get("kind", ""))
        if lid in SKIPPED:
            skipped.append((lid, SKIPPED[lid]))
            continue
        if not kind.startswith("nccl-tests"):
            continue
        if lid not in CONFIGS:
            skipped.append((lid, "nccl-tests log with no run configuration in this script"))
            continue
        logs.append((lid, log))
    return logs, skipped


def run_one(opts, cfg, run, run_dir, args):
    """Runs one eidolon command; returns (parsed table or None, status text)."""
    cmd = build_command(opts, cfg, run, run_dir, args)
    env = dict(os.environ)
    env.update(opts.extra_env)
    env.update(run.get("env", {}))
    os.makedirs(run_dir, exist_ok=True)
    t0 = time.time()
    try:
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=opts.timeout, universal_newlines=True)
    except FileNotFoundError as e:
        return None, "could not start: %s" % e
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        with open(os.path.join(run_dir, "stdout.txt"), "w") as f:
            f.write(out)
        return None, "timed out after %d s" % opts.timeout
    with open(os.path.join(run_dir, "stdout.txt"), "w") as f:
        f.write(proc.stdout)
    with open(os.path.join(run_dir, "stderr.txt"), "w") as f:
        f.write(proc.stderr)
    table, where = find_table(run_dir, proc.stdout)
    wall = time.time() - t0
    if not table["rows"]:
        tail = " | ".join(l for l in proc.stderr.strip().splitlines()[-3:])
        return None, "exit %d, no table (%s)" % (proc.returncode, tail or "no stderr")
    status = "ok (%d rows, %.0f s wall%s)" % (len(table["rows"]), wall,
                                             "" if where == "stdout" else ", table from " + where)
    if proc.returncode != 0:
        status += ", exit %d" % proc.returncode
    return table, status


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build"),
                    help="build directory with bin/eidolon and bin/collective-bench (default: build)")
    ap.add_argument("--data-dir", default=DEFAULT_DATA, help="validation logs (default: %(default)s)")
    ap.add_argument("--results-dir", default=os.path.join(HERE, "results"),
                    help="where the report, the plot and runs/ go (default: validation/results)")
    ap.add_argument("--only", action="append", default=[],
                    help="only logs whose id contains this (repeatable)")
    ap.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    ap.add_argument("--sizes-max", type=parse_size, default=None,
                    help="cap the largest size (e.g. 64M) for a quick run; larger rows are dropped")
    ap.add_argument("--model", default="flow", help="eidolon run --model (default: flow)")
    ap.add_argument("--timeout", type=int, default=7200, help="seconds per run (default 7200)")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="extra environment for every run (repeatable), e.g. EIDOLON_VIRTUAL_CLOCKS=0")
    ap.add_argument("--self-test", action="store_true",
                    help="parse validation/testdata/ and check the comparison code; runs nothing")
    opts = ap.parse_args()

    if opts.self_test:
        return self_test()

    opts.extra_env = {}
    for item in opts.env:
        if "=" not in item:
            ap.error("--env wants NAME=VALUE, not %r" % item)
        k, v = item.split("=", 1)
        opts.extra_env[k] = v
    opts.eidolon = os.path.join(opts.build_dir, "bin", "eidolon")
    opts.bench = os.path.join(opts.build_dir, "bin", "collective-bench")
    opts.sweep = os.path.join(opts.build_dir, "bin", "eidolon-collective-sweep")
    logs, skipped = load_logs(opts.data_dir, opts.only)
    if not logs:
        print("no nccl-tests logs selected in %s" % opts.data_dir, file=sys.stderr)
        return 1
    if not opts.dry_run:
        for exe in (opts.eidolon, opts.bench):
            if not os.access(exe, os.X_OK):
                print("missing %s (build it: cmake --build %s --target %s)" % (
                    exe, opts.build_dir, os.path.basename(exe)), file=sys.stderr)
                return 1

    runs_dir = os.path.join(opts.results_dir, "runs")
    results = []
    for lid, log in logs:
        cfg = dict(CONFIGS[lid])
        cfg["emulated_nccl"], cfg["nccl_source"] = log_nccl_version(log, cfg)
        points = measured_points(log, cfg, opts.sizes_max)
        tables, runs = {}, []
        needed = {p["run"] for p in points}
        for run in cfg["runs"]:
            args = capped_args(run["args"], opts.sizes_max)
            rinfo = {"name": run["name"]}
            runs.append(rinfo)
            if args is None or run["name"] not in needed:
                rinfo["status"] = "skipped (above --sizes-max)"
                if opts.dry_run:
                    print("# skipped %s/%s: above --sizes-max" % (lid, run["name"]))
                continue
            run_dir = os.path.join(runs_dir, lid, run["name"])
            cmd = build_command(opts, cfg, run, run_dir, args)
            env_shown = dict(opts.extra_env, **run.get("env", {}))
            rinfo["command"] = shell_line(env_shown, cmd, relative=True)
            if opts.dry_run:
                print(shell_line(env_shown, cmd))
                rinfo["status"] = "dry run"
                continue
            print("[%s/%s] %s" % (lid, run["name"], rinfo["command"]), flush=True)
            table, status = run_one(opts, cfg, run, run_dir, args)
            rinfo["status"] = status
            print("    -> %s" % status, flush=True)
            if table:
                tables[run["name"]] = table
        attach_simulated(points, tables)
        choices = {} if opts.dry_run else model_choices(opts, cfg, points)
        for p in points:
            p["choice"] = choices.get(p["size"]) if cfg["kind"] == "sweep" else None
            p["why"] = explain(lid, p, p["choice"])
        ok = sum(1 for r in runs if r["status"].startswith("ok"))
        tried = sum(1 for r in runs if not r["status"].startswith("skipped"))
        if opts.dry_run:
            status = "dry run"
        elif tried == 0:
            status = "not run (above --sizes-max)"
        else:
            status = "%d/%d runs ok" % (ok, tried)
        results.append({"id": lid, "log": log, "cfg": cfg, "points": points, "runs": runs,
                        "status": status})

    if opts.dry_run:
        for lid, why in skipped:
            print("# not compared: %s: %s" % (lid, why))
        return 0
    md = os.path.join(opts.results_dir, "nccl-validation.md")
    png = os.path.join(opts.results_dir, "nccl-validation.png")
    write_markdown(md, results, opts, skipped)
    plotted = write_plot(png, results)
    total = stats([p for r in results for p in r["points"]])
    print("wrote %s%s" % (md, " and %s" % png if plotted else ""))
    print("|error| >= 1 MiB: mean %s max %s; < 1 MiB: mean %s max %s" % (
        pct(total["large"]["mean"]), pct(total["large"]["max"]),
        pct(total["small"]["mean"]), pct(total["small"]["max"])))
    return 0


# ----------------------------------------------------------------------------- self-test

def self_test():
    """Parses the samples in validation/testdata and checks the comparison on known numbers."""
    failures = []

    def check(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            failures.append(what)

    td = os.path.join(HERE, "testdata")
    data = DEFAULT_DATA

    # 1. nccl-tests format, 32 ranks, -g 1: every row equals the log's out-of-place row.
    text = open(os.path.join(td, "nccl-tests-allreduce-voltagepark-sample.txt")).read()
    t = parse_nccl_tests(text)
    check(t["collective"] == "all_reduce_perf" and t["nranks"] == 32, "voltagepark sample: header")
    log = None
    if os.path.exists(os.path.join(data, "nccl-allreduce-voltagepark-h100-4node.yaml")):
        log = yaml.safe_load(open(os.path.join(data, "nccl-allreduce-voltagepark-h100-4node.yaml")))
        want = [(r["size_bytes"], r["busbw_gbps"], r["time_us"]) for r in log["rows"]]
        got = [(r["size"], r["oop"]["busbw"], r["oop"]["time_us"]) for r in t["rows"]]
        check(got == want, "voltagepark sample: %d rows match the log's size/busbw/time" % len(want))
    check(all(r["redop"] == "sum" and r["root"] == -1 and r["type"] == "float" for r in t["rows"]),
          "voltagepark sample: type/redop/root columns")
    check(t["oob"] == 0 and t["avg_busbw"] is not None, "voltagepark sample: trailer")

    # 1b. The NCCL release of a log: NCCL's own start-up line first, then the stated field.
    check(log_nccl_version({"raw": "x\nNCCL INFO NCCL version 2.18.3+cuda12.2\n"}, {})[0] == "2.18.3",
          "release from the log's 'NCCL version' line")
    check(log_nccl_version({"software": {"nccl_version": "2.24.3+cuda12.6"}}, {})[0] == "2.24.3",
          "release from software.nccl_version (build suffix dropped)")
    check(log_nccl_version({"software": {"nccl_version": "2.29.2 (nccl-library=22902)"}}, {})[0]
          == "2.29.2", "release from software.nccl_version with a note")
    check(log_nccl_version({"software": {"nccl_version": "not stated"}}, {})[0] is None,
          "no release where the log states none")

    # 2. The same with a launcher's per-line prefix.
    pre = "\n".join("[rank0]:" + l.strip() for l in text.splitlines())  # eidolon run's prefix
    t2 = parse_nccl_tests(pre)
    check([r["size"] for r in t2["rows"]] == [r["size"] for r in t["rows"]] and t2["nranks"] == 32,
          "prefixed lines parse the same")

    # 3. alltoall (double, N/A in the in-place #wrong).
    t3 = parse_nccl_tests(open(os.path.join(td, "nccl-tests-alltoall-xxrjun-sample.txt")).read())
    check(len(t3["rows"]) == 10 and all(r["ip"]["wrong"] is None for r in t3["rows"])
          and all(r["oop"]["wrong"] == 0 for r in t3["rows"]), "alltoall sample: N/A handled")
    check(t3["rows"][-1]["size"] == 17179869184 and t3["rows"][-1]["oop"]["busbw"] == 348.03,
          "alltoall sample: last row")

    # 4. collective-bench's own output (N/A in both #wrong columns, size-0 row).
    t4 = parse_nccl_tests(open(os.path.join(td, "collective-bench-allgather-sample.txt")).read())
    check(t4["collective"] == "all_gather_perf" and t4["nranks"] == 4 and len(t4["rows"]) == 9
          and t4["rows"][0]["size"] == 0 and t4["rows"][0]["redop"] == "none",
          "collective-bench sample: rows, redop, ranks")

    # 5. Old layout without redop/root and one result group.
    t5 = parse_nccl_tests("        1024           256     float    45.80   0.02   0.04      0\n")
    check(len(t5["rows"]) == 1 and t5["rows"][0]["oop"]["busbw"] == 0.04 and t5["rows"][0]["ip"] is None,
          "old layout, one group")

    # 6. Comparison: simulated = 1.1 x measured everywhere -> +10%, buckets split at 1 MiB.
    if log is not None:
        cfg = CONFIGS["nccl-allreduce-voltagepark-h100-4node"]
        pts = measured_points(log, cfg, None)
        fake = {"rows": [{"size": r["size"], "ip": r["ip"],
                          "oop": dict(r["oop"], busbw=r["oop"]["busbw"] * 1.1,
                                      time_us=r["oop"]["time_us"] / 1.1)} for r in t["rows"]]}
        attach_simulated(pts, {"run": fake})
        s = stats(pts)
        check(all(abs(p["error"] - 0.1) < 1e-9 for p in pts), "relative error +10% on every point")
        check(s["large"]["n"] == 14 and s["small"]["n"] == 17 and len(pts) == 31
              and abs(s["large"]["max"] - 0.1) < 1e-9, "1 MiB buckets")
        capped = measured_points(log, cfg, 64 * MiB)
        check(max(p["size"] for p in capped) == 64 * MiB, "--sizes-max drops larger rows")
        check(capped_args(VP_ARGS, 64 * MiB)[3] == str(64 * MiB) and
              capped_args(["-b", "16G", "-e", "16G"], 64 * MiB) is None, "--sizes-max caps -e")
        # The report and the plot from these numbers (to a temporary directory).
        import shutil
        import tempfile
        tmp = tempfile.mkdtemp(prefix="nccl-validation-selftest-")

        class O:
            model = "flow"
            sizes_max = None
        pts[0]["why"], pts[1]["why"] = (False, "a finding"), (True, "a cause")
        res = [{"id": "nccl-allreduce-voltagepark-h100-4node", "log": log, "cfg": cfg,
                "points": pts, "runs": [{"name": "run", "status": "self-test"}], "status": "self-test"}]
        write_markdown(os.path.join(tmp, "r.md"), res, O, [])
        write_plot(os.path.join(tmp, "r.png"), res)
        md = open(os.path.join(tmp, "r.md")).read()
        check("| 8 GiB | 330.93 | 364.02 | +10.0% |" in md, "markdown row (busbw from time)")
        check("| UNEXPLAINED: a finding |" in md and "| a cause |" in md and "| 1 / 1 |" in md,
              "why column and the summary's count of explained rows")
        check(abs(pts[0]["measured"] - 8 / 38.37e3 * 2 * 31 / 32) < 1e-12,
              "busbw from size / time x 2(n-1)/n")
        check(os.path.getsize(os.path.join(tmp, "r.png")) > 1000, "plot written")
        if not failures:
            shutil.rmtree(tmp, ignore_errors=True)

    # 6b. Why a row is off: the first finding whose log, sizes, sign and choice match.
    ag = "nccl-allgather-voltagepark-h100-4node"
    w = explain(ag, {"size": 4 * MiB, "error": 0.27}, "Ring/LL128 x16")
    check(w is not None and not w[0] and "LL128 ring floor" in w[1], "unexplained finding matched")
    w = explain("nccl-broadcast-voltagepark-h100-4node", {"size": 4 * MiB, "error": 0.15},
                "Ring/LL128 x16")
    check(w is not None and w[0] and "back to back" in w[1], "explained finding matched")
    check(explain(ag, {"size": MiB, "error": 0.05}, "Ring/LL128 x16") is None, "10% or less: none")
    check(explain("nccl-allreduce-voltagepark-h100-4node", {"size": 64, "error": 0.15},
                  "Tree/LL x1")[1].startswith("Tree/LL on one channel"),
          "'reduce' findings stay off all_reduce rows")
    check(explain("nccl-x", {"size": MiB, "error": 0.5}, None) == (False, "no finding recorded"),
          "no finding: unexplained")
    check(all("%%" not in r["text"] and "%s" not in r["text"] for r in EXPLANATIONS),
          "finding texts formatted")

    # 7. Every configured log exists and every run configuration names a topology file.
    for lid, cfg in CONFIGS.items():
        check(os.path.exists(os.path.join(TOPO, cfg["topology"])), "%s: topology exists" % lid)
    print("self-test: %s" % ("FAILED (%d)" % len(failures) if failures else "passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
