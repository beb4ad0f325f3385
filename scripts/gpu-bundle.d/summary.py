#!/usr/bin/env python3
"""summary.py TMPDIR [--strict] — the GPU check's summary (gpu-check calls it; README, "The GPU check").

Reads what gpu-check left in TMPDIR (raw/info.tsv, raw/steps.tsv, raw/*.json, logs/*.log) and writes
TMPDIR/summary.json and TMPDIR/summary.md: the device and driver, every step with its status, the CUDA tests,
each measured figure next to what zplan predicts for it (the cluster preset of this GPU, or the simulation of
`zplan exec --validate` from the measured profile), and the targets as fractions:
  fused Adam        >= 0.80 of the bandwidth a plain device copy reaches (the better of cudaMemcpy and the
                    backend's copy kernel; bytes read + written)
  GEMM fp16, bf16   >= 0.90 of a plain cublasGemmEx loop of the same shapes (time of the plain loop / time
                    through the backend, summed over the shapes)
  exec --validate   step time within 10% and memory within 3% of the prediction, per run
Exit 0: every step that must run ran and every test passed (and, with --strict, every target was met);
1 otherwise. Standard library only.
"""
import json
import math
import os
import re
import sys

ADAM_TARGET = 0.80
GEMM_TARGET = 0.90
STEP_TOL = 0.10
MEM_TOL = 0.03
REQUIRED = ["tests_cuda", "tests_cuda_coll", "bench", "calibrate", "clusters",
            "exec_np1_stage0", "exec_np1_stage1", "exec_np1_stage2", "exec_np1_stage3"]
# HBM bandwidth of the presets (vocab/zp_cluster.c, spec sheets): the preset JSON carries peak and PCIe only
HBM_GBS = {"V100": 900.0, "A100": 2039.0, "H100": 3350.0, "H200": 4800.0, "H800": 3350.0, "B200": 8000.0}
# nvidia-smi's product name holds the key ("NVIDIA H200", "NVIDIA H100 80GB HBM3"): the cluster of that GPU
PRESET_OF = [("H100", "dgx-h100"), ("H200", "dgx-h200"), ("H800", "hgx-h800"), ("B200", "dgx-b200"),
             ("A100", "dgx-a100"), ("V100", "dgx2")]


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_tsv(path, ncols):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                rows.append(parts + [""] * (ncols - len(parts)))
    except OSError:
        pass
    return rows


def last_line(path):
    """The line of a log that says what went wrong: the last one from zplan or a test (mpirun's own
    banners come after it), else the last one that is not a rule of dashes."""
    try:
        with open(path, errors="replace") as f:
            lines = [l.strip() for l in f if l.strip().strip("-=")]
    except OSError:
        return ""
    ours = [l for l in lines if re.match(r"(zplan|zp_gpu_bench|test_|rank \d+:|SKIP|NCCL|collectives)", l)]
    return (ours or lines or [""])[-1]


def fmt(x, nd=3):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    if isinstance(x, float):
        return f"{x:.{nd}g}" if abs(x) < 1e3 else f"{x:.0f}"
    return str(x)


def criterion(path, log):
    """Counts and failures of a Criterion JSON report (or, without one, the last line of its log)."""
    rep = load(path)
    res = {"passed": 0, "failed": 0, "errored": 0, "skipped": 0, "failures": []}
    if not isinstance(rep, dict):
        res["note"] = last_line(log) or "no report"
        return res
    for k in ("passed", "failed", "errored", "skipped"):
        v = rep.get(k)
        if isinstance(v, int):
            res[k] = v
    for suite in rep.get("test_suites", []) or []:
        for t in suite.get("tests", []) or []:
            st = str(t.get("status", "")).upper()
            if st in ("FAILED", "ERRORED"):
                res["failures"].append({"test": f"{suite.get('name')}::{t.get('name')}", "status": st,
                                        "messages": t.get("messages", [])})
    return res


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    d = sys.argv[1]
    strict = "--strict" in sys.argv[2:]
    raw, logs = os.path.join(d, "raw"), os.path.join(d, "logs")
    info = {k: v for k, v in read_tsv(os.path.join(raw, "info.tsv"), 2)}
    steps = []
    for name, rc, secs, cmd in read_tsv(os.path.join(raw, "steps.tsv"), 4):
        steps.append({"name": name, "exit": None if rc == "-" else int(rc), "seconds": float(secs or 0),
                      "command" if rc != "-" else "not_run": cmd,
                      "last_line": last_line(os.path.join(logs, name + ".log")) if rc not in ("-", "0") else ""})
    by = {s["name"]: s for s in steps}
    ok = lambda n: n in by and by[n]["exit"] == 0

    bench = load(os.path.join(raw, "bench.json")) or {}
    profile = load(os.path.join(raw, "profile.json"))
    clusters = load(os.path.join(raw, "clusters.json")) or {}
    dev = bench.get("device", {}) if isinstance(bench, dict) else {}

    # ---- tests ----
    tests = {"kernels_cuda": criterion(os.path.join(raw, "tests_cuda.json"), os.path.join(logs, "tests_cuda.log")),
             "collectives_np1": last_line(os.path.join(logs, "tests_cuda_coll.log")),
             "collectives_np2": by.get("tests_cuda_coll_np2", {}).get("not_run")
             or last_line(os.path.join(logs, "tests_cuda_coll_np2.log"))}
    kc = tests["kernels_cuda"]
    tests_pass = ok("tests_cuda") and kc["failed"] == 0 and kc["errored"] == 0 and kc["passed"] > 0 and ok("tests_cuda_coll")

    # ---- figures: measured against the preset of this GPU ----
    name = info.get("gpu_name") or dev.get("name", "")
    preset, hbm = None, None
    for key, pname in PRESET_OF:
        if key in name:
            preset = next((r for r in clusters.get("rows", []) if r.get("name") == pname), None)
            hbm = HBM_GBS[key]
            break
    figures = []

    def fig(what, measured, predicted, unit, note=""):
        figures.append({"figure": what, "measured": measured, "predicted": predicted, "unit": unit,
                        "ratio": measured / predicted if measured and predicted else None, "note": note})

    copy = bench.get("copy", {})
    pname = preset["name"] if preset else None
    if copy:
        fig("device copy bandwidth (cudaMemcpy, read + write)", copy.get("memcpy_gbs"), hbm if preset else None,
            "GB/s", f"preset {pname}: HBM {hbm:.0f} GB/s" if preset else "no preset for this GPU")
        fig("device copy bandwidth (backend copy kernel)", copy.get("kernel_gbs"), hbm if preset else None, "GB/s")
    adam = bench.get("adam", {})
    if adam:
        fig("fused Adam (30 B/param)", adam.get("gbs"), copy.get("reference_gbs"), "GB/s",
            "predicted: the simulator prices Adam at the copy bandwidth")
    gemm = bench.get("gemm", {})
    for dt in ("fp16", "bf16", "fp32"):
        g = gemm.get(dt)
        if g:
            peak = preset.get("peak_tflops") if preset and dt != "fp32" else None
            fig(f"GEMM {dt}, best shape", g.get("best_backend_tflops"), peak, "TFLOP/s",
                f"preset {pname} dense peak" if peak else "")
    hd = bench.get("host_device", {})
    if hd:
        pc = preset.get("pcie_gbs") if preset else None
        fig("host to device (pinned)", hd.get("h2d_pinned_gbs"), pc, "GB/s", f"preset {pname} PCIe" if pc else "")
        fig("device to host (pinned)", hd.get("d2h_pinned_gbs"), pc, "GB/s")
        fig("host to device (pageable)", hd.get("h2d_pageable_gbs"), None, "GB/s")
    if isinstance(profile, dict):
        fig("calibrated GEMM peak (fp16)", (profile.get("compute", {}) or {}).get("peak_flops_fp16", 0) / 1e12 or None,
            preset.get("peak_tflops") if preset else None, "TFLOP/s", "zplan calibrate --backend cuda")
    nccl = bench.get("nccl", {})
    for kind in ("allreduce", "reduce_scatter", "allgather", "broadcast"):
        pts = nccl.get(kind) if isinstance(nccl, dict) else None
        if pts:
            big = pts[-1]
            fig(f"NCCL {kind}, one GPU, {big['bytes'] / 2**20:.0f} MiB (algbw)", big.get("algbw_gbs"), None, "GB/s")

    # ---- targets ----
    targets = []

    def target(what, frac, thr, detail, op=">="):
        met = None if frac is None else (frac >= thr if op == ">=" else abs(frac) <= thr)
        targets.append({"target": what, "value": frac, "threshold": thr, "op": op, "met": met, "detail": detail})

    if adam and copy:
        target("fused Adam / plain device copy bandwidth", adam.get("fraction_of_copy"), ADAM_TARGET,
               f"{fmt(adam.get('gbs'))} GB/s against {fmt(copy.get('reference_gbs'))} GB/s at "
               f"{adam.get('points', [{}])[-1].get('params', '?')} parameters")
    else:
        target("fused Adam / plain device copy bandwidth", None, ADAM_TARGET, "not measured (bench failed)")
    for dt in ("fp16", "bf16"):
        g = gemm.get(dt)
        if g:
            worst = min((s.get("fraction", 1) for s in g.get("shapes", [])), default=None)
            target(f"GEMM {dt} through the backend / plain cublasGemmEx loop", g.get("fraction"), GEMM_TARGET,
                   f"summed over {len(g.get('shapes', []))} shapes at {gemm.get('tokens')} tokens; worst shape "
                   f"{fmt(worst)}")
        else:
            target(f"GEMM {dt} through the backend / plain cublasGemmEx loop", None, GEMM_TARGET, "not measured")

    # ---- exec --validate ----
    execs = []
    for np_ in (1, 2):
        for s in range(4):
            n = f"exec_np{np_}_stage{s}"
            if n not in by:
                continue
            r = load(os.path.join(raw, n + ".json"))
            e = {"run": n, "ranks": np_, "stage": s, "ok": ok(n)}
            if not ok(n):
                e["why"] = by[n].get("last_line") or by[n].get("not_run", "")
            if isinstance(r, dict):
                st = r.get("steps", [])
                e["loss_first"] = st[0]["loss"] if st else None
                e["loss_last"] = st[-1]["loss"] if st else None
                e["tokens_per_s"] = r.get("tokens_per_s")
                e["memory_measured_gb"] = (r.get("memory_peak_gb") or {}).get("total")
                v = r.get("validation")
                if isinstance(v, dict) and "predicted_step_s" in v:
                    e.update({"measured_step_s": v.get("measured_step_s"), "predicted_step_s": v.get("predicted_step_s"),
                              "step_error": v.get("step_error"),
                              "memory_predicted_gb": (v.get("predicted_memory_gb") or {}).get("total"),
                              "memory_error": (v.get("memory_error") or {}).get("total"),
                              "phases_s": v.get("phases_s")})
                elif isinstance(v, dict):
                    e["validation_error"] = v.get("error")
            execs.append(e)
            if np_ == 1 or e["ok"]:
                lab = f"{np_} rank{'s' if np_ > 1 else ''}, stage {s}"
                target(f"exec --validate step time, {lab}: abs(predicted / measured - 1)", e.get("step_error"), STEP_TOL,
                       f"predicted {fmt(e.get('predicted_step_s'))} s, measured {fmt(e.get('measured_step_s'))} s"
                       if e.get("step_error") is not None else (e.get("why") or e.get("validation_error") or "no prediction"),
                       op="|x|<=")
                target(f"exec --validate memory, {lab}: abs(predicted / measured - 1)", e.get("memory_error"), MEM_TOL,
                       f"predicted {fmt(e.get('memory_predicted_gb'))} GB, measured {fmt(e.get('memory_measured_gb'))} GB"
                       if e.get("memory_error") is not None else (e.get("why") or "no prediction"), op="|x|<=")

    missing = [n for n in REQUIRED if not ok(n)]
    targets_met = all(t["met"] for t in targets)
    passed = tests_pass and not missing
    status = "passed" if passed and (targets_met or not strict) else "failed"

    summary = {
        "status": status,
        "targets_met": targets_met,
        "failed_steps": missing,
        "checked_at": info.get("started_at"),
        "host": info.get("host"),
        "device": {"name": name, "driver": info.get("driver"), "memory_mib": info.get("memory_mib"),
                   "gpus": info.get("gpus"), "compute_capability": f"{dev.get('cc_major')}.{dev.get('cc_minor')}"
                   if dev else None, "sms": dev.get("sms"), "cuda_driver_api": dev.get("driver_api"),
                   "cuda_runtime_api": dev.get("runtime_api"), "nccl": dev.get("nccl"),
                   "cuda_libs": info.get("cuda_libs", "").split(), "wheels_python": info.get("wheels_python")},
        "bundle": {"path": info.get("bundle"), "commit": info.get("bundle_commit"), "cuda": info.get("bundle_cuda"),
                   "archs": info.get("bundle_archs"), "min_driver": info.get("min_driver")},
        "run": {"model": info.get("model"), "micro_batch": info.get("micro_batch"), "quick": info.get("quick") == "1"},
        "steps": steps,
        "tests": tests,
        "figures": figures,
        "targets": targets,
        "exec": execs,
        "raw": {"bench": bench, "profile": profile,
                "exec": {e["run"]: load(os.path.join(raw, e["run"] + ".json")) for e in execs}},
    }
    with open(os.path.join(d, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")

    # ---- markdown ----
    L = []
    L.append(f"# zplan GPU check: {status}")
    L.append("")
    L.append(f"Device: **{name or '?'}** ({info.get('gpus', '?')} GPU(s), {info.get('memory_mib', '?')} MiB, "
             f"compute capability {summary['device']['compute_capability'] or '?'}), driver {info.get('driver') or '?'}; "
             f"bundle {info.get('bundle_commit')} built with CUDA {info.get('bundle_cuda')} for sm {info.get('bundle_archs')}; "
             f"checked {info.get('started_at')} on {info.get('host')}.")
    L.append(f"CUDA libraries used: {', '.join(summary['device']['cuda_libs']) or '?'}.")
    L.append("")
    L.append("## Targets")
    L.append("")
    L.append("| target | value | needed | met | detail |")
    L.append("|---|---|---|---|---|")
    for t in targets:
        need = f">= {t['threshold']:.2f}" if t["op"] == ">=" else f"within {t['threshold']:.2f}"
        met = "-" if t["met"] is None else ("yes" if t["met"] else "**no**")
        L.append(f"| {t['target']} | {fmt(t['value'])} | {need} | {met} | {t['detail']} |")
    L.append("")
    L.append("## Tests")
    L.append("")
    L.append(f"- CUDA kernels against their CPU references (Criterion): {kc['passed']} passed, {kc['failed']} failed, "
             f"{kc['errored']} crashed, {kc['skipped']} skipped{(' — ' + kc['note']) if kc.get('note') else ''}")
    for fl in kc["failures"]:
        msgs = "; ".join(str(m) for m in fl.get("messages", [])[:3])
        L.append(f"  - {fl['test']} {fl['status']}: {msgs}")
    L.append(f"- NCCL collectives, one rank: {tests['collectives_np1'] or '-'}")
    L.append(f"- NCCL collectives, two ranks: {tests['collectives_np2'] or '-'}")
    L.append("")
    L.append("## Figures: measured against predicted")
    L.append("")
    L.append("| figure | measured | predicted | measured / predicted | unit | note |")
    L.append("|---|---|---|---|---|---|")
    for f_ in figures:
        L.append(f"| {f_['figure']} | {fmt(f_['measured'])} | {fmt(f_['predicted'])} | {fmt(f_['ratio'])} | {f_['unit']} | {f_['note']} |")
    L.append("")
    L.append(f"## zplan exec --validate ({info.get('model')}, micro-batch {info.get('micro_batch')})")
    L.append("")
    L.append("| run | ok | step measured (s) | step predicted (s) | error | memory measured (GB) | memory predicted (GB) | error | loss first -> last |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for e in execs:
        loss = f"{fmt(e.get('loss_first'), 5)} -> {fmt(e.get('loss_last'), 5)}" if e.get("loss_first") is not None else "-"
        pct = lambda x: "-" if x is None else f"{100 * x:+.1f}%"
        L.append(f"| {e['run']} | {'yes' if e['ok'] else 'no: ' + str(e.get('why', ''))[:120]} | {fmt(e.get('measured_step_s'))} | "
                 f"{fmt(e.get('predicted_step_s'))} | {pct(e.get('step_error'))} | {fmt(e.get('memory_measured_gb'))} | "
                 f"{fmt(e.get('memory_predicted_gb'))} | {pct(e.get('memory_error'))} | {loss} |")
    L.append("")
    L.append("## Steps")
    L.append("")
    L.append("| step | exit | seconds | |")
    L.append("|---|---|---|---|")
    for s in steps:
        ex = "not run" if s["exit"] is None else str(s["exit"])
        L.append(f"| {s['name']} | {ex} | {s['seconds']:.1f} | {s.get('not_run') or s.get('last_line') or ''} |")
    L.append("")
    if missing:
        L.append(f"Failed steps: {', '.join(missing)} (their logs are in raw.tar.gz, logs/).")
        L.append("")
    with open(os.path.join(d, "summary.md"), "w") as f:
        f.write("\n".join(L).replace("\r", ""))
    return 0 if status == "passed" else 1


if __name__ == "__main__":
    sys.exit(main())
