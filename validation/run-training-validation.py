#!/usr/bin/python3
"""Compare eidolon's simulated training step times with published ones.

For every training step time in ../shared/validation-data (train-*.yaml: NVIDIA's dgxc-benchmarking
Llama 3.1 8B and 70B, the Megatron-LM H100 model table) run examples/train-gpt under `eidolon run`
with the row's model, parallelism, batch, sequence length and precision on a DGX H100 cluster of the
row's size (rail-optimized, 8 x 400 Gb/s NICs per node), take train-gpt's median step time and write

    validation/results/training-validation.md    per row: measured and simulated step time, error,
                                                 what was run, or why the row was not run
    validation/results/training-validation.png   simulated against measured step time
    validation/results/training-validation.json  the simulated results, merged across invocations
                                                 (so `--only` runs add to the table)

See validation/README.md. Run with /usr/bin/python3 (needs PyYAML; matplotlib for the plot).
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def default_data_dir():
    """../shared/validation-data beside the checkout, or beside the main checkout of a worktree."""
    here = os.path.normpath(os.path.join(REPO, "..", "shared", "validation-data"))
    if os.path.isdir(here):
        return here
    try:
        common = subprocess.run(["git", "-C", REPO, "rev-parse", "--path-format=absolute",
                                 "--git-common-dir"], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, universal_newlines=True,
                                timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return here
    main = os.path.normpath(os.path.join(os.path.dirname(common), "..", "shared", "validation-data"))
    return main if common and os.path.isdir(main) else here

TRAIN_GPT_README = os.path.join(REPO, "examples", "train-gpt", "README.md")

# Shipped DGX H100 clusters by node count; other sizes are generated with the same fabric (one
# leaf per rail holding up to 32 nodes, non-blocking spines), as topologies/dgx-h100-128node.yaml.
SHIPPED_TOPOLOGIES = {1: "topologies/dgx-h100-1node.yaml", 2: "topologies/default.yaml",
                      4: "topologies/dgx-h100-4node.yaml", 128: "topologies/dgx-h100-128node.yaml"}
GPUS_PER_NODE = 8

# What train-gpt does differently from the framework that measured each data set. These are
# printed with every row of the set; a row whose |error| exceeds 10% must be explained by them
# (or by EXPLAINED below), and is flagged as unexplained otherwise.
SET_NOTES = {
    "train-dgxc-llama31-8b": [
        "NeMo runs Megatron's distributed optimizer (ZeRO-1: one reduce-scatter of gradients and one "
        "all-gather of parameters per step), and so does train-gpt (`--distributed-optimizer`, "
        "sharded over dp) where it fits in 80 GB; where it does not (few dp ranks), train-gpt runs "
        "`--fsdp` (ZeRO-3: parameters gathered twice per layer per micro-batch, gradients "
        "reduce-scattered per micro-batch) and the row says so. train-gpt's parameter all-gather "
        "after the optimizer step runs on the compute stream (Megatron overlaps it with the next "
        "forward).",
        "Attention: train-gpt's flash-attention kernels are priced at FlashAttention-2 rates; NeMo "
        "(Transformer Engine) runs cuDNN's fused attention, which reaches FlashAttention-3-class "
        "rates on H100 (validation/measurements: cuDNN sm90 fprop 620-750 TFLOP/s vs flash 300-360).",
        "Context parallel: Megatron/TE split the causal sequence into 2 x cp load-balanced chunks; "
        "train-gpt's ring attention gives rank r of the ring the r-th contiguous chunk (not "
        "load-balanced), so the last cp rank does the most attention work and sets the step time.",
        "fp8: Transformer Engine's fp8_hybrid runs forward and backward GEMMs in fp8 (e4m3/e5m2) with "
        "fp8 parameters; train-gpt casts only the forward GEMM operands to e4m3 (backward GEMMs "
        "stay bf16) and adds the cast kernels, so its fp8 speed-up is smaller.",
        "Measured: the last step of a 50-step run (train_step_timing); simulated: the median of the "
        "steps after warm-up (eidolon's host clock is deterministic by default, so the steps agree).",
    ],
    "train-dgxc-llama31-70b": [
        "NeMo's distributed optimizer (ZeRO-1) is run as train-gpt `--distributed-optimizer` where it "
        "fits, else `--fsdp` (ZeRO-3), as for 8B: without sharding a rank's 4.5B parameters "
        "(70B / tp 4 x pp 4) x 18 bytes = 82 GB.",
        "tp_comm_overlap (TE's userbuffers overlap of TP all-gather/reduce-scatter with the GEMMs) "
        "is not in train-gpt: its sequence-parallel collectives run between the GEMMs.",
        "Context parallel is not load-balanced in train-gpt (see the 8B notes); fp8 backward GEMMs stay "
        "bf16.",
    ],
    "train-megatron-h100-model-table": [
        "Step times are derived by the data set from published TFLOP/s (no step time is published); "
        "micro-batch size and activation checkpointing are not given.",
        "The family is MHA with a 4h GELU MLP and a 131072 vocabulary at sequence 4096; train-gpt's "
        "presets are fixed shapes, so a row runs only where a preset has its layers, hidden size, "
        "heads and ffn size.",
    ],
}



def explain_fp8(case, cases, results):
    """fp8 rows: how much of the measured fp8 speed-up train-gpt's fp8 (forward GEMMs only) has."""
    if case["precision"] != "fp8":
        return None
    twin = next((c for c in cases if c["set"] == case["set"] and c["gpus"] == case["gpus"]
                 and c["precision"] == "bf16"), None)
    text = ("train-gpt's fp8 covers the forward GEMMs only (a third of the GEMM FLOPs; dgrad and "
            "wgrad stay bf16), Transformer Engine's fp8_hybrid all three")
    sim_twin = results.get(twin["id"]) if twin else None
    if twin and sim_twin and not sim_twin.get("failed") and twin.get("measured"):
        text += (": measured fp8/bf16 step ratio %.2f, simulated %.2f (the bf16 row is %+.1f%%)" % (
            case["measured"] / twin["measured"], results[case["id"]]["median_s"] /
            sim_twin["median_s"], 100 * error_of(twin, sim_twin)))
    return text


def explain_zero3(case, cases, results):
    """Rows slower than measured where FSDP's per-micro-batch gathers dominate the step."""
    r = results.get(case["id"]) or {}
    if "--fsdp" not in (case["args"] or []) or not r.get("rank_params") or not r.get("accumulation"):
        return None
    if error_of(case, r) is None or error_of(case, r) < 0.10:
        return None
    gathered = 2 * 2 * r["rank_params"] * r["accumulation"] / 1e9  # 2 gathers x bf16 x micro-batches
    text = ("NeMo's distributed optimizer (ZeRO-1) gathers the %.1f GB of bf16 parameters a rank "
            "holds and reduce-scatters their gradients once per step; train-gpt has no ZeRO-1 and "
            "runs FSDP (ZeRO-3), which gathers them twice and reduce-scatters fp32 gradients once "
            "per micro-batch (%d per step): %.0f GB gathered and %.0f GB reduce-scattered per step "
            "per rank over the dp x cp group, whose ranks sit on different nodes (one 400 Gb/s NIC "
            "per GPU)" % (2 * r["rank_params"] / 1e9, r["accumulation"], gathered,
                          4 * r["rank_params"] * r["accumulation"] / 1e9))
    if r.get("comm_s_per_step") and r.get("compute_s_per_step"):
        text += ("; GPU 0 is busy communicating %.1f s and computing %.1f s per step (simulated), "
                 "so the step is bound by that traffic, not by the kernels" % (
                     r["comm_s_per_step"], r["compute_s_per_step"]))
    return text


def explain_cp_imbalance(case, cases, results):
    """Context-parallel rows: train-gpt's ring attention gives the last cp rank the most causal
    attention work (contiguous chunks, not Megatron's load-balanced 2 x cp chunking)."""
    r = results.get(case["id"]) or {}
    if "--cp" not in (case["args"] or []) or r.get("failed") or not r.get("steps_run"):
        return None
    path = os.path.join(HERE, "results", "runs", case["id"], "eidolon-out", "summary.json")
    try:
        with open(path) as f:
            gpus = json.load(f)["gpus"]
    except (OSError, ValueError, KeyError):
        return None
    steps = r["steps_run"]
    compute = [g["compute_ns"] / 1e9 / steps for g in gpus]
    lo, hi = min(compute), max(compute)
    if hi < 1.1 * lo:
        return None
    return ("train-gpt's context parallelism is not load-balanced: the busiest GPU computes %.2f s "
            "per step and the least busy %.2f s (the attention of the later causal chunks); "
            "balanced as Megatron/Transformer Engine balance it, each would compute about %.2f s "
            "(measured step %.2f s)" % (hi, lo, (hi + lo) / 2, case["measured"]))


# Explanations of an error above 10% (what the simulated program or model lacks): functions of
# (case, all cases, results) returning the text for the rows they explain, else None.
EXPLANATIONS = [explain_cp_imbalance, explain_fp8, explain_zero3]


# ----------------------------------------------------------------------------- inputs

def load_presets(readme=TRAIN_GPT_README):
    """train-gpt's presets from the table in its README: name -> shape."""
    presets = {}
    with open(readme) as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 9 or not re.match(r"^\d+$", cells[1]):
                continue
            heads, kv = [int(x) for x in cells[3].split("/")]
            presets[cells[0]] = {"layers": int(cells[1]), "hidden": int(cells[2]), "heads": heads,
                                 "kv_heads": kv, "ffn": int(cells[4]), "vocab": int(cells[5]),
                                 "seq": int(cells[6]), "mlp": cells[8]}
    if not presets:
        raise SystemExit("%s: no preset table found (| model | layers | hidden | ...)" % readme)
    return presets


def match_preset(presets, cfg):
    """(name, differences) of the preset with the row's layers/hidden/heads/ffn, or (None, why)."""
    want = (cfg.get("num_layers"), cfg.get("hidden_size"), cfg.get("num_attention_heads"),
            cfg.get("ffn_hidden_size"))
    kv = cfg.get("num_query_groups") or cfg.get("num_attention_heads")
    for name, p in sorted(presets.items()):
        if (p["layers"], p["hidden"], p["heads"], p["ffn"]) != want:
            continue
        if p["kv_heads"] != kv:
            return None, ("the nearest train-gpt preset, %s, has the row's layers, hidden, heads and "
                          "ffn but %d kv heads and a %s MLP (the row: %s kv heads); train-gpt would "
                          "need a preset of this shape or shape flags" % (name, p["kv_heads"],
                                                                          p["mlp"], kv))
        diffs = []
        if cfg.get("vocab_size") and p["vocab"] != cfg["vocab_size"]:
            diffs.append("vocab %d (data %d)" % (p["vocab"], cfg["vocab_size"]))
        return name, diffs
    return None, ("no train-gpt preset has %s layers, hidden %s, %s heads (%s kv), ffn %s, vocab %s; "
                  "train-gpt would need this preset or shape flags (--layers/--hidden/--heads/"
                  "--kv-heads/--ffn/--vocab)" % (want[0], want[1], want[2], kv, want[3],
                                                  cfg.get("vocab_size")))


def precision_of(row):
    p = str(row.get("precision", "bf16")).split()[0].lower()
    return "fp8" if p.startswith("fp8") else "bf16"


def case_id(set_id, row):
    par = row["parallelism"]
    return "%s-%dgpu-%s-tp%d-pp%d-cp%d" % (
        set_id.replace("train-", ""), row["gpus"], precision_of(row), par.get("tp") or 1,
        par.get("pp") or 1, par.get("cp") or 1)


def plan_row(set_id, log, index, row, presets):
    """One comparison: the measured step time and the train-gpt command line, or why it can't run."""
    par = row["parallelism"]
    metric = row.get("metric", {})
    measured = metric.get("step_time_s", metric.get("step_time_s_derived"))
    case = {"key": "%s#%d" % (set_id, index), "id": case_id(set_id, row), "set": set_id,
            "model": row["model"], "gpus": row["gpus"], "nodes": row.get("nodes"),
            "measured": measured, "measured_kind": "step_time_s" if "step_time_s" in metric
            else "step_time_s_derived", "precision": precision_of(row),
            "layout": "TP%d PP%d CP%d DP%d%s" % (par.get("tp") or 1, par.get("pp") or 1,
                                                 par.get("cp") or 1, par.get("dp") or 1,
                                                 (" VP%d" % par["vp"]) if par.get("vp") else ""),
            "gbs": row.get("global_batch"), "mbs": row.get("micro_batch"),
            "seq": row.get("seq_len"), "args": None, "not_run": None, "notes": []}
    shape = row.get("model_config") or log.get("model_config") or {}
    preset, why = match_preset(presets, shape)
    if preset is None:
        case["not_run"] = why
        return case
    if why:
        case["notes"].append("preset %s differs: %s" % (preset, ", ".join(why)))
    micro = row.get("micro_batch")
    if not micro:
        micro = 1
        case["notes"].append("no micro-batch size given: 1 assumed")
    args = ["--model", preset, "--seq-len", str(row["seq_len"]),
            "--local-batch", str(micro), "--global-batch", str(row["global_batch"])]
    for flag in ("tp", "pp", "cp"):
        if (par.get(flag) or 1) > 1:
            args += ["--%s" % flag, str(par[flag])]
    if (par.get("vp") or 1) > 1:
        args += ["--vp", str(par["vp"])]
    # NeMo runs Megatron's distributed optimizer (ZeRO-1); so does train-gpt where it fits in the
    # GPU's memory (run_case falls back to FSDP, ZeRO-3, on an out-of-memory error and says so).
    args.append("--distributed-optimizer")
    if log.get("software", {}).get("sequence_parallel") and (par.get("tp") or 1) > 1:
        args.append("--sequence-parallel")
    args += ["--precision", case["precision"], "--ac", "none"]
    case["args"] = args
    return case


# Report order: the data sets by model size, then unknown ones by name.
SET_ORDER = ["train-dgxc-llama31-8b", "train-dgxc-llama31-70b", "train-megatron-h100-model-table"]


def set_rank(name):
    stem = name[:-len(".yaml")]
    return (SET_ORDER.index(stem) if stem in SET_ORDER else len(SET_ORDER), name)


def load_cases(data_dir, presets, only):
    cases = []
    names = [n for n in os.listdir(data_dir) if n.startswith("train-") and n.endswith(".yaml")]
    for name in sorted(names, key=set_rank):
        if not (name.startswith("train-") and name.endswith(".yaml")):
            continue
        path = os.path.join(data_dir, name)
        with open(path) as f:
            log = yaml.safe_load(f)
        for key in ("id", "rows"):
            if key not in log:
                raise SystemExit("%s: no '%s' field" % (path, key))
        for i, row in enumerate(log["rows"]):
            for key in ("gpus", "parallelism", "global_batch", "seq_len"):
                if key not in row:
                    raise SystemExit("%s: rows[%d] has no '%s' field" % (path, i, key))
            case = plan_row(log["id"], log, i, row, presets)
            if only and not any(s in case["id"] or s in case["key"] for s in only):
                continue
            cases.append(case)
    return cases


# ----------------------------------------------------------------------------- running

def topology_for(gpus, topo_dir):
    """A DGX H100 cluster with exactly gpus / 8 nodes: shipped where one exists, else generated."""
    nodes = max(1, (gpus + GPUS_PER_NODE - 1) // GPUS_PER_NODE)
    if nodes in SHIPPED_TOPOLOGIES:
        return os.path.join(REPO, SHIPPED_TOPOLOGIES[nodes])
    per_leaf = min(nodes, 32)
    path = os.path.join(topo_dir, "dgx-h100-%dnode.yaml" % nodes)
    os.makedirs(topo_dir, exist_ok=True)
    with open(path, "w") as f:
        f.write("# Generated by validation/run-training-validation.py: %d DGX H100, rail-optimized\n"
                "# two-tier fabric (NIC i of every node on the rail-i leaf, %d nodes per leaf), 1:1.\n"
                "version: 1\nname: dgx-h100-%dnode\ngpu_specs: %s\nhost: h100-server\n"
                "generate:\n  nodes: %d\n"
                "  node:\n    type: dgx-h100\n  fabric:\n    type: two-tier\n"
                "    rail_optimized: true\n    nodes_per_leaf: %d\n    spines: %d\n"
                "    oversubscription: 1\n" % (
                    nodes, per_leaf, nodes,
                    os.path.relpath(os.path.join(REPO, "topologies", "gpus"), topo_dir), nodes,
                    per_leaf, min(16, max(2, per_leaf))))
    return path


def eidolon_command(opts, case, topology, out_dir):
    build = opts.build_dir
    return ([os.path.join(build, "bin", "eidolon"), "run", "--topology", topology,
             "--gpus", str(case["gpus"]), "--out", out_dir, "--progress", "off", "--"] +
            [os.path.join(build, "bin", "train-gpt")] + case["args"] +
            ["--steps", str(opts.steps), "--warmup-steps", str(opts.warmup_steps)])


STEP_RE = re.compile(r"step:\s*(\d+)\s+loss:\s*\S+\s+memory:\s*([\d.]+)GiB\(([\d.]+)%\)\s+"
                     r"tps:\s*([\d,]+)\s+tflops:\s*([\d.]+)\s+mfu:\s*([\d.]+)%\s+time:\s*([\d.]+)s")
MEDIAN_RE = re.compile(r"median step time ([\d.]+)s over (\d+) steps")
WALL_RE = re.compile(r"^wall time\s+([\d.]+) s", re.M)
PARAMS_RE = re.compile(r"this rank holds ([\d,]+) parameters")
ACCUM_RE = re.compile(r"accumulation (\d+)\)")


def parse_train_output(text):
    """train-gpt's step lines and end line (rank 0's, possibly behind eidolon's [rankN]: prefix)."""
    steps = [{"step": int(m.group(1)), "memory_gib": float(m.group(2)), "tps": int(
        m.group(4).replace(",", "")), "tflops": float(m.group(5)), "mfu_pct": float(m.group(6)),
        "time_s": float(m.group(7))} for m in STEP_RE.finditer(text)]
    median = MEDIAN_RE.search(text)
    wall = WALL_RE.search(text)
    params = PARAMS_RE.search(text)
    accum = ACCUM_RE.search(text)
    return {"steps": steps, "median_s": float(median.group(1)) if median else None,
            "rank_params": int(params.group(1).replace(",", "")) if params else None,
            "accumulation": int(accum.group(1)) if accum else None,
            "median_over": int(median.group(2)) if median else None,
            "sim_wall_s": float(wall.group(1)) if wall else None}


def failure_reason(text, rc):
    lines = [l for l in text.splitlines() if l.strip() and "never joined" not in l]
    for pat in ("out of memory", "watchdog", "train-gpt: rank", "error", "PARTIAL"):
        for l in lines:
            if pat.lower() in l.lower():
                return "%s (exit %s)" % (l.strip()[:300], rc)
    return "exit %s; last line: %s" % (rc, lines[-1][:300] if lines else "(no output)")


def run_case(opts, case):
    result = run_case_once(opts, case)
    if (result and "out of memory" in (result.get("failed") or "")
            and "--distributed-optimizer" in case["args"]):
        # ZeRO-1 keeps full bf16 weights and fp32 gradients on every GPU; where that does not fit,
        # the sharded scheme train-gpt has is ZeRO-3.
        case["args"] = ["--fsdp" if a == "--distributed-optimizer" else a for a in case["args"]]
        case["notes"].append("the distributed optimizer (ZeRO-1) ran out of GPU memory "
                             "(%s); ran --fsdp (ZeRO-3) instead" % result["failed"][:160])
        result = run_case_once(opts, case)
    return result


def run_case_once(opts, case):
    run_dir = os.path.join(opts.results_dir, "runs", case["id"])
    topology = topology_for(case["gpus"], os.path.join(opts.results_dir, "runs", "topologies"))
    cmd = eidolon_command(opts, case, topology, os.path.join(run_dir, "eidolon-out"))
    shown = " ".join(shlex.quote(os.path.relpath(c, REPO) if os.path.isabs(c) else c) for c in cmd)
    if opts.dry_run:
        print(shown)
        return None
    os.makedirs(run_dir, exist_ok=True)
    print("[%s] %s" % (time.strftime("%H:%M:%S"), shown), flush=True)
    start = time.time()
    try:
        proc = subprocess.run(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=opts.timeout,
                              start_new_session=True)
        text, rc = proc.stdout, proc.returncode
    except subprocess.TimeoutExpired as e:
        text = e.stdout if isinstance(e.stdout, str) else (e.stdout or b"").decode("utf8", "replace")
        rc = "timeout after %d s" % opts.timeout
    wall = time.time() - start
    with open(os.path.join(run_dir, "log.txt"), "w") as f:
        f.write(text)
    parsed = parse_train_output(text)
    result = {"command": shown, "wall_s": round(wall, 1), "date": time.strftime("%Y-%m-%d %H:%M"),
              "revision": eidolon_revision(), "steps_run": opts.steps, "warmup": opts.warmup_steps}
    result.update(parsed)
    result.update(gpu0_shares(os.path.join(run_dir, "eidolon-out", "summary.json"), opts.steps))
    if rc != 0 or parsed["median_s"] is None:
        result["failed"] = failure_reason(text, rc)
    status = result.get("failed") or "median %.3f s" % parsed["median_s"]
    print("    -> %s (wall %.0f s)" % (status, wall), flush=True)
    return result


def gpu0_shares(summary_path, steps):
    """GPU 0's compute and communication busy time per step (whole run / steps) from summary.json."""
    try:
        with open(summary_path) as f:
            gpu = json.load(f)["gpus"][0]
        return {"compute_s_per_step": gpu["compute_ns"] / 1e9 / steps,
                "comm_s_per_step": gpu["comm_ns"] / 1e9 / steps}
    except (OSError, ValueError, KeyError, IndexError):
        return {}


def eidolon_revision():
    try:
        out = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             universal_newlines=True, timeout=30)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


# ----------------------------------------------------------------------------- report

def error_of(case, result):
    if not result or result.get("failed") or not case.get("measured"):
        return None
    return (result["median_s"] - case["measured"]) / case["measured"]


def fmt(v, spec="%.2f"):
    return "—" if v is None else spec % v


def row_status(case, result, opts, cases=(), results=None):
    if case["not_run"]:
        return "not run: " + case["not_run"] + (
            " (and %d GPUs > --max-gpus %d)" % (case["gpus"], opts.max_gpus)
            if case["gpus"] > opts.max_gpus else "")
    if result is None:
        if case["gpus"] > opts.max_gpus:
            return ("not run: %d GPUs > --max-gpus %d (one rank process per GPU on this 2-core, "
                    "24 GB machine; see the wall times of the rows that ran)" % (case["gpus"],
                                                                                 opts.max_gpus))
        return "not run yet (`--only %s`)" % case["id"]
    if result.get("failed"):
        return "failed: " + result["failed"]
    err = error_of(case, result)
    if err is not None and abs(err) > 0.10:
        texts = [t for t in (explain(case, cases, results or {}) for explain in EXPLANATIONS) if t]
        if texts:
            return "ran; error beyond ±10%: " + "; and ".join(texts)
        return "ran; error beyond ±10%: UNEXPLAINED (see the set's notes)"
    return "ran"


def write_markdown(path, cases, results, opts):
    lines = ["# eidolon vs published training step times", "",
             "Written by `validation/run-training-validation.py` (%s). Measured: the training rows "
             "of `../shared/validation-data`; simulated: `examples/train-gpt` under `eidolon run` "
             "(flow network model, deterministic host clock) on DGX H100 clusters of the row's size "
             "(rail-optimized two-tier InfiniBand, 8 x 400 Gb/s per node: `topologies/dgx-h100-1node"
             ".yaml`, `default.yaml` (2 nodes), `dgx-h100-4node.yaml`, generated alike for other "
             "sizes). Simulated = train-gpt's median step time over the steps after warm-up; error "
             "= (simulated - measured) / measured. No per-row factor is applied anywhere."
             % time.strftime("%Y-%m-%d %H:%M"), ""]
    ran = [(c, results[c["id"]]) for c in cases if c["id"] in results
           and not results[c["id"]].get("failed")]
    errs = [abs(error_of(c, r)) for c, r in ran if error_of(c, r) is not None]
    if errs:
        lines += ["**%d of %d rows ran**; |error| mean %.1f%%, max %.1f%%; %d rows within 10%%." % (
            len(ran), len(cases), 100 * sum(errs) / len(errs), 100 * max(errs),
            sum(1 for e in errs if e <= 0.10)), ""]
    lines += ["| row | GPUs | layout | GBS x seq | prec. | measured (s) | simulated (s) | error | "
              "peak mem (GiB) | wall (s) | status |",
              "| --- | ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for c in cases:
        r = results.get(c["id"])
        ok = r is not None and not r.get("failed")
        err = error_of(c, r)
        mem = r["steps"][-1]["memory_gib"] if ok and r.get("steps") else None
        lines.append("| %s | %d | %s | %s x %s | %s | %s%s | %s | %s | %s | %s | %s |" % (
            c["model"] if "Megatron" not in c["model"] else c["model"].split(" (")[0],
            c["gpus"], c["layout"], c["gbs"], c["seq"], c["precision"], fmt(c["measured"]),
            "*" if c["measured_kind"] != "step_time_s" else "", fmt(r["median_s"], "%.3f") if ok
            else "—", ("%+.1f%%" % (100 * err)) if err is not None else "—",
            fmt(mem), fmt(r.get("wall_s") if r else None, "%.0f"),
            row_status(c, r, opts, cases, results).replace("|", "/")))
    lines += ["", "\\* derived by the data set from published TFLOP/s (no step time published).", "",
              "Wall = seconds this machine (2 cores, 24 GB, shared) took for the whole "
              "`eidolon run` (start-up, %d warm-up + %d timed steps). Commands and logs of each run: "
              "`validation/results/runs/<row>/` (not committed); the results: "
              "`training-validation.json`." % (opts.warmup_steps, opts.steps - opts.warmup_steps),
              ""]
    commands = [(c["id"], results[c["id"]]["command"]) for c in cases if c["id"] in results]
    if commands:
        lines += ["## Commands", ""]
        lines += ["- `%s`: `%s`" % kv for kv in commands]
        lines.append("")
    lines += ["## What train-gpt and the simulation do differently (per data set)", ""]
    for set_id in sorted({c["set"] for c in cases}, key=lambda i: set_rank(i + ".yaml")):
        lines += ["### %s" % set_id, ""]
        lines += ["- " + n for n in SET_NOTES.get(set_id, ["(no notes)"])]
        extra = sorted({n for c in cases if c["set"] == set_id for n in c["notes"]})
        lines += ["- " + n for n in extra]
        lines.append("")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print("wrote %s" % os.path.relpath(path, REPO))


def write_plot(path, cases, results):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not available: no plot")
        return
    pts = [(c, results[c["id"]]) for c in cases if c["id"] in results
           and not results[c["id"]].get("failed")]
    if not pts:
        return
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 5))
    values = [v for c, r in pts for v in (c["measured"], r["median_s"])]
    lo, hi = min(values) * 0.8, max(values) * 1.2
    ax.plot([lo, hi], [lo, hi], "k--", lw=0.8, label="simulated = measured")
    ax.fill_between([lo, hi], [0.9 * lo, 0.9 * hi], [1.1 * lo, 1.1 * hi], color="0.9",
                    label="±10%")
    series = {}
    for c, r in pts:
        series.setdefault("%s %s" % (c["model"].split(" (")[0], c["precision"]), []).append((c, r))
    for i, (name, members) in enumerate(sorted(series.items())):
        ax.plot([c["measured"] for c, _ in members], [r["median_s"] for _, r in members],
                "os^v"[i % 4], color="C%d" % i, ms=7, ls="none", label=name)
        for c, r in members:  # the GPU count beside each point
            ax.annotate(str(c["gpus"]), (c["measured"], r["median_s"]), fontsize=7,
                        xytext=(5, 3 - 9 * (members.index((c, r)) % 2)), textcoords="offset points")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured step time (s)")
    ax.set_ylabel("simulated step time (s)")
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title("train-gpt under eidolon vs published (numbers: GPUs)")
    labels = ["%s\n%dG %s" % (c["model"].replace("Llama 3.1 ", "L").split(" (")[0], c["gpus"],
                              c["precision"]) for c, _ in pts]
    errs = [100 * error_of(c, r) for c, r in pts]
    bx.bar(range(len(pts)), errs, color=["C0" if abs(e) <= 10 else "C3" for e in errs])
    bx.axhline(10, color="0.5", lw=0.8, ls="--")
    bx.axhline(-10, color="0.5", lw=0.8, ls="--")
    bx.axhline(0, color="k", lw=0.8)
    bx.set_xticks(range(len(pts)))
    bx.set_xticklabels(labels, fontsize=7)
    bx.set_ylabel("error (%)")
    bx.set_title("(simulated - measured) / measured")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print("wrote %s" % os.path.relpath(path, REPO))


# ----------------------------------------------------------------------------- main

def refresh_from_runs(results, opts):
    """Re-read what the stored results took from the runs' logs, where the logs are still here."""
    for case_id, result in results.items():
        run_dir = os.path.join(opts.results_dir, "runs", case_id)
        log = os.path.join(run_dir, "log.txt")
        if not os.path.exists(log):
            continue
        with open(log) as f:
            parsed = parse_train_output(f.read())
        if parsed["median_s"] is not None:
            result.update(parsed)
            result.update(gpu0_shares(os.path.join(run_dir, "eidolon-out", "summary.json"),
                                      result.get("steps_run", opts.steps)))


def load_results(path):
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return {}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data-dir", default=default_data_dir())
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    ap.add_argument("--results-dir", default=os.path.join(HERE, "results"))
    ap.add_argument("--only", action="append", default=[],
                    help="only rows whose id contains it (repeatable), e.g. llama31-8b-8gpu")
    ap.add_argument("--max-gpus", type=int, default=64,
                    help="run rows of at most this many GPUs (default 64), smallest first")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup-steps", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=1800, help="wall seconds per run (default 1800)")
    ap.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    ap.add_argument("--report-only", action="store_true",
                    help="rewrite the report and plot from the stored results, run nothing")
    ap.add_argument("--self-test", action="store_true",
                    help="check the parser and the planning on the shipped data; runs nothing")
    opts = ap.parse_args()
    if opts.self_test:
        return self_test(opts)
    opts.build_dir = os.path.abspath(opts.build_dir)
    presets = load_presets()
    cases = load_cases(opts.data_dir, presets, opts.only)
    store = os.path.join(opts.results_dir, "training-validation.json")
    results = load_results(store)
    todo = sorted((c for c in cases if not c["not_run"] and c["gpus"] <= opts.max_gpus),
                  key=lambda c: (c["gpus"], c["set"], c["precision"]))
    if not opts.report_only:
        for case in todo:
            result = run_case(opts, case)
            if result is None:
                continue
            results[case["id"]] = result
            with open(store, "w") as f:
                json.dump(results, f, indent=1, sort_keys=True)
    if opts.dry_run:
        for c in cases:
            if c not in todo:
                print("# not run: %s: %s" % (c["id"], row_status(c, results.get(c["id"]), opts)))
        return 0
    refresh_from_runs(results, opts)
    if results:
        with open(store, "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)
    all_cases = load_cases(opts.data_dir, presets, [])
    write_markdown(os.path.join(opts.results_dir, "training-validation.md"), all_cases, results,
                   opts)
    write_plot(os.path.join(opts.results_dir, "training-validation.png"), all_cases, results)
    return 0


def check_planning(cases, check):
    """The shipped data's rows planned as the data set describes them."""
    by_key = {c["key"]: c for c in cases}
    c8 = by_key.get("train-dgxc-llama31-8b#0")
    check(c8 is not None and c8["args"][:2] == ["--model", "llama3-8b"] and "--cp" in c8["args"]
          and c8["args"][c8["args"].index("--cp") + 1] == "2" and "--distributed-optimizer" in c8["args"]
          and c8["args"][c8["args"].index("--global-batch") + 1] == "128",
          "8B 8-GPU row planned as llama3-8b cp2 distributed optimizer GBS 128: %s" % (c8 and c8["args"]))
    c70 = by_key.get("train-dgxc-llama31-70b#0")
    check(c70 is not None and "--sequence-parallel" in c70["args"] and
          c70["args"][c70["args"].index("--vp") + 1] == "5", "70B row planned with SP and vp 5")
    mg = by_key.get("train-megatron-h100-model-table#0")
    check(mg is not None and mg["not_run"] and "24 layers" in mg["not_run"],
          "Megatron 1.7B row not run for lack of a preset: %s" % (mg and mg["not_run"]))


def self_test(opts):
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    sample = ("[rank0]:step: 1  loss: 0.0000  memory: 42.57GiB(53.82%)  tps: 10,442  tflops: 604.72"
              "  mfu: 61.12%  time: 12.553s\n[rank0]:train-gpt: median step time 12.553s over 2 "
              "steps after 1 warm-up; peak memory 42.57 GiB reserved\nwall time             "
              "24.868 s\n")
    p = parse_train_output(sample)
    check(p["median_s"] == 12.553 and p["median_over"] == 2, "median parsed: %s" % p)
    check(p["steps"] and p["steps"][0]["tps"] == 10442 and p["steps"][0]["mfu_pct"] == 61.12,
          "step line parsed: %s" % p["steps"])
    check(p["sim_wall_s"] == 24.868, "wall parsed")
    presets = load_presets()
    check(presets.get("llama3-8b", {}).get("ffn") == 14336, "llama3-8b preset read from README")
    if os.path.isdir(opts.data_dir):
        check_planning(load_cases(opts.data_dir, presets, []), check)
    else:
        print("self-test: %s not found: the planning of its rows is not checked" % opts.data_dir)
    err = error_of({"measured": 10.0}, {"median_s": 11.5})
    check(abs(err - 0.15) < 1e-12, "error = (11.5 - 10) / 10 = +15%")
    if failures:
        print("self-test: FAILED\n  " + "\n  ".join(failures))
        return 1
    print("self-test: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
