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
        "all-gather of parameters per step, overlap_grad_sync and overlap_param_sync on), and so "
        "does train-gpt (`--distributed-optimizer`, sharded over dp x cp, the parameter all-gather "
        "overlapped with the next step's forward) where it fits in 80 GB; where it does not (few "
        "dp ranks), train-gpt runs `--fsdp` (ZeRO-3) and the row says so.",
        "Attention: train-gpt's flash-attention kernels are priced at FlashAttention-2 rates; NeMo "
        "(Transformer Engine) runs cuDNN's fused attention, which reaches FlashAttention-3-class "
        "rates on H100 (validation/measurements: cuDNN sm90 fprop 620-750 TFLOP/s vs flash "
        "300-360). Pricing train-gpt's kernels is the cost model's business (another issue); rows "
        "above +10% give the attention time at both rates.",
        "Context parallel: load-balanced in both (2 x cp chunks, rank r holding chunks r and "
        "2cp-1-r).",
        "fp8: both run the layers' forward and backward GEMMs in fp8 (e4m3, e5m2 gradients). "
        "Transformer Engine keeps fp8 parameters (cast once per step) and fuses each cast with its "
        "transpose; train-gpt casts every operand per GEMM and micro-batch with separate cast and "
        "cast-transpose kernels, memory-bound work TE does not do.",
        "Measured: the last step of a 50-step run (train_step_timing); simulated: the median of the "
        "steps after warm-up (eidolon's host clock is deterministic by default, so the steps agree).",
    ],
    "train-dgxc-llama31-70b": [
        "NeMo's distributed optimizer (ZeRO-1) is run as train-gpt `--distributed-optimizer` where it "
        "fits, else `--fsdp` (ZeRO-3), as for 8B: without sharding a rank's 4.5B parameters "
        "(70B / tp 4 x pp 4) x 18 bytes = 82 GB.",
        "tp_comm_overlap (TE's userbuffers overlap of TP all-gather/reduce-scatter with the GEMMs) "
        "is not in train-gpt: its sequence-parallel collectives run between the GEMMs.",
        "Attention, context parallelism and fp8 as in the 8B notes.",
    ],
    "train-megatron-h100-model-table": [
        "Step times are derived by the data set from published TFLOP/s (no step time is published); "
        "micro-batch size and activation checkpointing are not given (micro-batch 1 and no "
        "recomputation assumed).",
        "The family is MHA with a 4h GELU MLP and a 131072 vocabulary at sequence 4096: train-gpt's "
        "gpt3-175b preset (LayerNorm, GELU) at each row's shape through the shape flags. Megatron's "
        "--tp-comm-overlap needs sequence parallelism, so TP rows run with --sequence-parallel "
        "(train-gpt does not overlap those collectives with the GEMMs); --overlap-param-gather "
        "means the distributed optimizer, which train-gpt runs.",
    ],
}



H100_HBM_BYTES_PER_S = 3.35e12


def fp8_cast_bytes(case):
    """Bytes train-gpt's fp8 casts move per step on one GPU: per layer GEMM y[m, n] = x[m, k] w^T
    and micro-batch, forward casts x and w, backward dy twice (plain and transposed), w and x
    transposed: 2 (mk + nk + mn) elements, 3 bytes each (bf16 read, fp8 written)."""
    shape, par = case.get("shape"), case.get("par") or {}
    if not shape or not shape.get("ffn") or not case.get("gbs"):
        return None
    tp, d, hd = par.get("tp") or 1, shape["hidden"], shape["hidden"] // shape["heads"]
    m = case["seq"] / (par.get("cp") or 1)  # tokens of one sequence on this rank (micro-batch 1)
    qkv = (shape["heads"] + 2 * shape["kv_heads"]) * hd / tp
    fc1 = (2 if shape["gated"] else 1) * shape["ffn"] / tp
    gemms = [(qkv, d), (d, shape["heads"] * hd / tp), (fc1, d), (d, shape["ffn"] / tp)]
    per_layer = sum(3 * 2 * (m * k + n * k + m * n) for n, k in gemms)
    micro = case["gbs"] / (par.get("dp") or 1)
    return per_layer * shape["layers"] / (par.get("pp") or 1) * micro


def explain_fp8(case, cases, results):
    """fp8 rows: the measured and simulated fp8 speed-ups, and the cast traffic TE does not have."""
    if case["precision"] != "fp8":
        return None
    twin = next((c for c in cases if c["set"] == case["set"] and c["gpus"] == case["gpus"]
                 and c["precision"] == "bf16"), None)
    text = ("train-gpt's fp8 casts every GEMM operand per micro-batch with unfused cast and "
            "cast-transpose kernels")
    cast = fp8_cast_bytes(case)
    if cast:
        text += (" (%.2f TB per step per GPU, about %.2f s at the H100's HBM rate); Transformer "
                 "Engine keeps fp8 weights and fuses each cast with its transpose, moving about a "
                 "third of that" % (cast / 1e12, cast / H100_HBM_BYTES_PER_S))
    sim_twin = results.get(twin["id"]) if twin else None
    if twin and sim_twin and not sim_twin.get("failed") and twin.get("measured"):
        text += ("; measured fp8/bf16 step ratio %.2f, simulated %.2f (the bf16 row is %+.1f%%)" % (
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


# The H100 spec's attention rates at head dim 128 as fractions of the dense bf16 peak
# (topologies/gpus/H100-SXM5-80GB.yaml: FA2 from the FA2/FA3 papers, FA3-class from the FA3 paper
# and our cuDNN sm90 measurements), and its causal efficiency.
H100_BF16_PEAK = 989.4e12
FA2_RATES = (0.374, 0.331)  # forward, backward
FA3_RATES = (0.655, 0.62)
CAUSAL_EFFICIENCY = 0.9


def attention_seconds(case, rates):
    """Causal attention time per step on one GPU at `rates`: per sequence and layer the forward is
    2 matmuls x 2 s^2 hidden / 2 (causal) FLOPs and the backward 2.5 times that; a GPU runs
    gbs / dp sequences through layers / pp layers with its heads / tp and its 1 / cp of the work."""
    shape, par = case.get("shape"), case.get("par") or {}
    if not shape or not case.get("gbs") or not case.get("seq"):
        return None
    s, d = case["seq"], shape["hidden"]
    fwd = 2 * 2 * s * s * d / 2
    per_gpu = (case["gbs"] / (par.get("dp") or 1)) * (shape["layers"] / (par.get("pp") or 1)) / (
        (par.get("tp") or 1) * (par.get("cp") or 1))
    rate = lambda r: H100_BF16_PEAK * r * CAUSAL_EFFICIENCY
    return per_gpu * (fwd / rate(rates[0]) + 2.5 * fwd / rate(rates[1]))


def explain_attention(case, cases, results):
    """Rows slower than measured: how much of the step is attention at FlashAttention-2 rates, and
    what it would be at the FA3-class rates of the cuDNN attention NeMo/Megatron (TE) run."""
    r = results.get(case["id"]) or {}
    err = error_of(case, r)
    fa2, fa3 = attention_seconds(case, FA2_RATES), attention_seconds(case, FA3_RATES)
    if err is None or err < 0.10 or not fa2:
        return None
    at_fa3 = r["median_s"] - (fa2 - fa3)
    return ("attention is priced at FlashAttention-2 rates (train-gpt's own kernels; pricing, "
            "another issue): about %.2f s of the step's compute; Transformer Engine's cuDNN "
            "attention runs at FA3-class rates (%.2f s), which would put the step near %.2f s "
            "(%+.1f%%)" % (fa2, fa3, at_fa3, 100 * (at_fa3 - case["measured"]) / case["measured"]))


def explain_megatron_faster(case, cases, results):
    """Model-table rows faster than the derived step time: what Megatron's GPT layer does that
    train-gpt's does not, and that the measured time is derived."""
    r = results.get(case["id"]) or {}
    err = error_of(case, r)
    if case["set"] != "train-megatron-h100-model-table" or err is None or err > -0.10:
        return None
    text = ("simulated faster than the step time the data set derives from Megatron's published "
            "TFLOP/s (%s%% MFU measured; train-gpt prints %.1f%%)" % (
                fmt(case.get("mfu"), "%.0f"), r["steps"][-1]["mfu_pct"] if r.get("steps") else 0))
    if r.get("compute_s_per_step") is not None:
        text += ("; GPU 0 computes %.3f s of the %.3f s step, its gradient and parameter traffic "
                 "hidden behind it" % (r["compute_s_per_step"], r["median_s"]))
    return text + ("; train-gpt's GPT layer has no linear biases and no dropout, which Megatron's "
                   "GPT has by default (bias-GELU and bias-dropout-add fusions, hidden and attention "
                   "dropout 0.1; the table does not say whether the benchmark turned them off): "
                   "memory-bound passes over every activation that are a larger share of the step "
                   "at small hidden sizes")


# The bus bandwidth of a whole-buffer all-gather or reduce-scatter of tens of MiB over the 8 GPUs
# of a DGX H100 node, as the simulation gives it (56 MiB: about 170 us, 345 GB/s; the single-node
# logs in ../shared/validation-data measure 307-336 GB/s for all-gathers of 128 MiB-1 GiB).
NVLINK_TP_BUSBW = 345e9


def explain_tp_comm(case, cases, results):
    """Rows slower than measured whose tensor-parallel collectives the measured run overlapped
    with its GEMMs (Megatron's --tp-comm-overlap, NeMo's tp_comm_overlap) and train-gpt does not."""
    r = results.get(case["id"]) or {}
    err = error_of(case, r)
    shape, par = case.get("shape"), case.get("par") or {}
    tp = par.get("tp") or 1
    if err is None or err < 0.10 or tp < 2 or "--sequence-parallel" not in (case["args"] or []):
        return None
    if not shape or not case.get("gbs") or not case.get("seq"):
        return None
    # Per layer and micro-batch: 6 all-gathers and 4 reduce-scatters of the whole sequence's
    # activations (tokens x hidden x 2 bytes), each moving (tp - 1) / tp of it per GPU.
    tokens = case["seq"] / (par.get("cp") or 1)
    micro = case["gbs"] / (par.get("dp") or 1)
    layers = shape["layers"] / (par.get("pp") or 1)
    seconds = (10 * tokens * shape["hidden"] * 2 * (tp - 1) / tp / NVLINK_TP_BUSBW * layers * micro)
    hidden = r["median_s"] - seconds
    return ("train-gpt runs its sequence-parallel all-gathers and reduce-scatters between the GEMMs, "
            "while the measured run hid them behind the GEMMs (--tp-comm-overlap: Transformer "
            "Engine's userbuffers, direct copies between the GPUs, which eidolon does not emulate; "
            "NCCL collectives split into pieces are slower than the whole collective at these sizes): "
            "about %.2f s of NVLink traffic per step on GPU 0 (10 x %d tokens x %d x 2 bytes per "
            "layer and micro-batch, %d layers, %d micro-batches, at %.0f GB/s bus bandwidth); hidden, "
            "the step would be near %.2f s (%+.1f%%)" % (
                seconds, tokens, shape["hidden"], layers, micro, NVLINK_TP_BUSBW / 1e9, hidden,
                100 * (hidden - case["measured"]) / case["measured"]))


# Explanations of an error above 10% (what the simulated program or model lacks): functions of
# (case, all cases, results) returning the text for the rows they explain, else None.
EXPLANATIONS = [explain_cp_imbalance, explain_fp8, explain_zero3, explain_attention,
                explain_tp_comm, explain_megatron_faster]


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


# train-gpt's shape flags, by the data sets' model_config keys.
SHAPE_FLAGS = [("num_layers", "layers", "--layers"), ("hidden_size", "hidden", "--hidden"),
               ("num_attention_heads", "heads", "--heads"), ("num_query_groups", "kv_heads",
                                                             "--kv-heads"),
               ("ffn_hidden_size", "ffn", "--ffn"), ("vocab_size", "vocab", "--vocab")]


def match_preset(presets, cfg):
    """(preset, shape flags, notes) that run the row's model: the preset of its exact shape, else
    the preset of its family (SwiGLU: llama3-8b; otherwise GPT's LayerNorm + GELU: gpt3-175b) with
    the shape flags for every field that differs, or (None, [], why) without a shape."""
    if not cfg.get("num_layers") or not cfg.get("hidden_size"):
        return None, [], "the data set gives no model shape (model_config)"
    want = {key: cfg.get(key) for key, _, _ in SHAPE_FLAGS}
    want["num_query_groups"] = want["num_query_groups"] or want["num_attention_heads"]
    swiglu = str(cfg.get("activation", "")).lower() == "swiglu"
    family = [n for n, p in presets.items() if (p["mlp"] == "SwiGLU") == swiglu]
    for name in sorted(family):
        p = presets[name]
        if all(want[key] is None or p[field] == want[key] for key, field, _ in SHAPE_FLAGS):
            return name, [], []
    name = "llama3-8b" if swiglu else "gpt3-175b"
    p = presets[name]
    flags = []
    for key, field, flag in SHAPE_FLAGS:
        if want[key] is not None and p[field] != want[key]:
            flags += [flag, str(want[key])]
    return name, flags, ["%s family (%s MLP) at the row's shape: %s" % (
        name, p["mlp"], " ".join(flags))]


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
            "seq": row.get("seq_len"), "args": None, "not_run": None, "notes": [],
            "par": {k: par.get(k) or 1 for k in ("tp", "pp", "cp", "dp")},
            "mfu": metric.get("mfu_pct")}
    shape = row.get("model_config") or log.get("model_config") or {}
    preset, shape_flags, why = match_preset(presets, shape)
    if preset is None:
        case["not_run"] = why
        return case
    case["notes"] += why
    p = presets[preset]
    case["shape"] = {"layers": shape.get("num_layers") or p["layers"],
                     "hidden": shape.get("hidden_size") or p["hidden"],
                     "heads": shape.get("num_attention_heads") or p["heads"],
                     "kv_heads": shape.get("num_query_groups") or shape.get("num_attention_heads")
                     or p["kv_heads"], "ffn": shape.get("ffn_hidden_size") or p["ffn"],
                     "gated": p["mlp"] == "SwiGLU"}
    micro = row.get("micro_batch")
    if not micro:
        micro = 1
        case["notes"].append("no micro-batch size given: 1 assumed")
    args = ["--model", preset] + shape_flags + ["--seq-len", str(row["seq_len"]),
            "--local-batch", str(micro), "--global-batch", str(row["global_batch"])]
    for flag in ("tp", "pp", "cp"):
        if (par.get(flag) or 1) > 1:
            args += ["--%s" % flag, str(par[flag])]
    if (par.get("vp") or 1) > 1:
        args += ["--vp", str(par["vp"])]
    # NeMo runs Megatron's distributed optimizer (ZeRO-1); so does train-gpt where it fits in the
    # GPU's memory (run_case falls back to FSDP, ZeRO-3, on an out-of-memory error and says so).
    args.append("--distributed-optimizer")
    software = log.get("software", {})
    # Megatron's --tp-comm-overlap needs sequence parallelism, so the model table ran with it.
    sp = software.get("sequence_parallel") or "--tp-comm-overlap" in str(
        software.get("optimizations", ""))
    if sp and (par.get("tp") or 1) > 1:
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
    check(c8 is not None and "--layers" not in c8["args"], "8B row runs the llama3-8b preset as is")
    mg = by_key.get("train-megatron-h100-model-table#0")
    want = ["--model", "gpt3-175b", "--layers", "24", "--hidden", "2048", "--heads", "16",
            "--kv-heads", "16", "--ffn", "8192", "--vocab", "131072"]
    check(mg is not None and not mg["not_run"] and mg["args"][:len(want)] == want,
          "Megatron 1.7B row planned as the GPT family at its shape: %s" % (mg and mg["args"]))
    mg16 = by_key.get("train-megatron-h100-model-table#2")
    check(mg16 is not None and "--sequence-parallel" in mg16["args"],
          "Megatron TP rows run with SP (tp-comm-overlap needs it)")


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
