"""What AdapTable costs a user: end-to-end ``AdapTable.predict_proba`` against the source model's
own ``predict_proba``, per row and as a ratio, at several batch sizes; ``fit`` wall time and peak
memory; then the adaptation core alone. Prints tables; asserts nothing.

The source model is the MLP of ``adaptable.models.train("mlp", dataset, seed=0)`` (trained once
into the cache). Each timing is repeated (``--repeats``); the median and the minimum are printed
(the machine may be shared: the minimum is the least disturbed run, the median the typical one).
Rows are the shuffled out-of-domain test split (``--scenario natural``) or the stream of another
scenario (``--scenario prior_0.1``: a pure label shift), cycled where a batch needs more rows.
Every timed pass starts from ``reset()``, so each repeat does the same work. One torch thread.

Columns of the first table:
- model: ``model.predict_proba(X_batch)`` (the model's own encoding + forward + softmax);
- AdapTable: ``AdapTable.predict_proba(X_batch)`` end to end (it calls the model itself);
- ratio: AdapTable / model, what a user pays for adapting relative to not adapting;
- overhead / model: (AdapTable - model) / model, the adaptation's own share;
- overhead us/row: AdapTable - model, per row.
The model and AdapTable passes alternate (model, AdapTable, model, ...), and the three
comparisons are medians over those pairs of neighbouring runs, so that a disturbance of the
machine weighs on both sides of a ratio alike.

``fit`` runs in a subprocess per dataset, so that its peak resident memory is its own: the table
gives the child's resident memory just before ``fit`` (dataset and model loaded) and its peak.
The child imports ``torch._dynamo`` before the timer: torch's optimisers import it on their
first step (about 2 s once per process, whatever is trained), a cost of importing torch rather
than of ``fit``.

The core table times ``adapt_logits(logits, X_batch)`` on logits computed in advance (the
calibrator's own encoding of the batch included, the model call excluded) and, where the
estimator exposes them (``encoder_`` / ``_adapt``; internal, may change), the adaptation on
batches encoded in advance (paper preset: the shift trend, the calibrator and the label
handler; default preset: the calibrator and the decider). Beside the times it gives the calls
of one batch in the middle of the stream (``sys.setprofile``): the numpy functions and array
methods called (numpy's own Python functions counted once, not the calls inside them; ufuncs
and operators on arrays are not calls the hook sees) and all function calls, Python and C.

The labelled-rows table times ``AdapTable.partial_fit(X, y)`` (labels arriving for rows already
predicted) per row, where the estimator has it, and ``partial_fit(None, y, rows=ids)`` where it
takes that (the same labels by row id alone, from the scores the adapter kept when it
predicted the rows: no model call), and ``predict_proba`` on a stream whose labels come back:
5 % of each batch's rows (a fixed draw) by row id 10 batches later, the predict_proba calls
timed once the adapter holds 10 labelled rows (the labels then choose its rule), beside the
model's own ``predict_proba`` on the same batches ("-" where the stream ends before).

With ``--device cuda`` the source model runs on the GPU (the adaptation stays on the CPU), and a
last table asks whether the adaptation should run where the logits are: per row, the copy of
the logits to the host, the adaptation on the host (prepared batches), the floor of a port to
the GPU (the numpy calls of one batch times one kernel launch there), and, for the graph
calibrator, its numpy kernel on the host beside its torch forward on the GPU.

Usage:
    python benchmarks/bench_adaptation.py --data-dir /path/to/data
        [--datasets heloc hospital_readmission] [--batch-sizes 16 64 256 1024 8192]
        [--rows 8192] [--repeats 5] [--cache-dir DIR] [--preset default|paper]
        [--fallback argmax|plugin|between] [--stream-check model|both]
        [--device cpu|cuda] [--no-fit]
"""

from __future__ import annotations

import argparse
import copy
import functools
import importlib
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import torch
from _timing import CLOCKS, timed, timed_pair

from adaptable import AdapTable, datasets, models
from adaptable.core.paper.post_training import Rows

BATCH_SIZES = (16, 64, 256, 1024, 8192)


def batches_of(X: pd.DataFrame, size: int, rows: int) -> list[pd.DataFrame]:
    """At least ``rows`` rows (and at least one batch) in batches of ``size``, cycling ``X``."""
    total = max(rows, size)
    total = -(-total // size) * size
    repeats = -(-total // len(X))
    pool = pd.concat([X] * repeats, ignore_index=True).iloc[:total]
    return [pool.iloc[i : i + size] for i in range(0, total, size)]


def load(
    name: str, data_dir: str | None, cache_dir: str | None, device: str = "cpu"
) -> tuple[Any, Any]:
    """The dataset and its seed-0 MLP (trained on the CPU), moved to ``device``."""
    dataset = datasets.load(name, data_dir=data_dir)
    model = models.train("mlp", dataset, seed=0, cache_dir=cache_dir, device="cpu")
    return dataset, model.to(device)


def calls_of(function: Callable[[], Any]) -> tuple[int, int]:
    """(numpy calls, all calls) made by one run of ``function`` (see the module docstring)."""
    numpy_dir = os.path.dirname(np.__file__)
    counts = {"numpy": 0, "all": 0}
    depth = [0]  # nesting inside numpy's own Python functions

    def owner_is_numpy(c_function: Any) -> bool:
        owner = getattr(c_function, "__self__", None)
        module = getattr(c_function, "__module__", None) or type(owner).__module__
        return isinstance(module, str) and module.split(".")[0] == "numpy"

    def hook(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            counts["all"] += 1
            if frame.f_code.co_filename.startswith(numpy_dir):
                if depth[0] == 0:
                    counts["numpy"] += 1
                depth[0] += 1
        elif event == "return" and frame.f_code.co_filename.startswith(numpy_dir):
            depth[0] = max(depth[0] - 1, 0)
        elif event == "c_call":
            counts["all"] += 1
            if depth[0] == 0 and owner_is_numpy(arg):
                counts["numpy"] += 1

    sys.setprofile(hook)
    try:
        function()
    finally:
        sys.setprofile(None)
    return counts["numpy"], counts["all"]


def rss_mib() -> float:
    """Current resident memory of this process (Linux /proc), MiB."""
    with open("/proc/self/statm") as handle:
        pages = int(handle.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def fit_child(name: str, data_dir: str | None, cache_dir: str | None, preset: str) -> None:
    """Subprocess body: one ``fit``, then its wall time and memory as a JSON line."""
    torch.set_num_threads(1)
    # torch's optimisers import torch._dynamo on their first step (about 2 s, once per
    # process); like `import torch` it is paid before the timer, not counted as fit's own.
    importlib.import_module("torch._dynamo")

    dataset, model = load(name, data_dir, cache_dir)
    before = rss_mib()
    start = time.perf_counter()
    method = AdapTable(preset=preset, random_state=0)
    method.fit(model, dataset.train.X, dataset.train.y, dataset.valid.X, dataset.valid.y)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    report = getattr(method, "post_training_", None)
    epochs = None if report is None else len(getattr(report, "train_losses", []))
    print(json.dumps({"seconds": seconds, "rss_before": before, "peak": peak, "epochs": epochs}))


def measure_fit(
    name: str, data_dir: str | None, cache_dir: str | None, preset: str
) -> dict[str, Any]:
    """Run :func:`fit_child` in a fresh interpreter and read its JSON line."""
    command = [sys.executable, __file__, "--fit-child", name, "--preset", preset]
    if data_dir:
        command += ["--data-dir", data_dir]
    if cache_dir:
        command += ["--cache-dir", cache_dir]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"fit subprocess failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def bench_dataset(
    name: str, args: argparse.Namespace
) -> tuple[list[str], list[str], list[str], list[str], dict[str, Any] | None]:
    """Rows of the end-to-end, core, labelled-rows and device tables for one dataset, and its
    fit figures (``None`` with ``--no-fit``)."""
    dataset, model = load(name, args.data_dir, args.cache_dir, args.device)
    if args.scenario == "natural":
        order = np.random.default_rng(0).permutation(len(dataset.test.y))
        X = dataset.test.X.iloc[order].reset_index(drop=True)
        y = np.asarray(dataset.test.y)[order]
    else:
        from adaptable import shifts

        stream = shifts.apply(args.scenario, dataset, seed=0)
        X, y = stream.X, np.asarray(stream.y)
    options = (
        {
            "fallback": args.fallback,
            "label_shift_level": args.label_shift_level,
            **({"stream_check": args.stream_check} if args.stream_check else {}),
        }
        if args.preset == "default"
        else {}
    )
    method = AdapTable(preset=args.preset, random_state=0, **options)
    method.fit(model, dataset.train.X, dataset.train.y, dataset.valid.X, dataset.valid.y)
    end_to_end, core, labelled, on_device = [], [], [], []
    for size in args.batch_sizes:
        batches = batches_of(X, size, args.rows)
        labels = batches_of(pd.DataFrame({"y": y}), size, args.rows)
        rows = sum(len(b) for b in batches)

        def run_model(batches: list[pd.DataFrame] = batches) -> None:
            for batch in batches:
                model.predict_proba(batch)

        def run_adaptable(batches: list[pd.DataFrame] = batches) -> None:
            method.reset()
            for batch in batches:
                method.predict_proba(batch)

        pair = timed_pair(run_model, run_adaptable, args.repeats, args.clock)
        us = lambda seconds, rows=rows: 1e6 * seconds / rows  # noqa: E731
        end_to_end.append(
            f"| {name} | {size} | {us(pair['baseline_median']):.2f} | "
            f"{us(pair['baseline_min']):.2f} | {us(pair['candidate_median']):.2f} | "
            f"{us(pair['candidate_min']):.2f} | {pair['ratio']:.2f} | {pair['ratio'] - 1:.2f} | "
            f"{us(pair['difference']):.2f} |"
        )

        logits = [model.predict_logits(b) for b in batches]

        def run_adapt_logits(batches: list[pd.DataFrame] = batches, logits: list = logits) -> None:
            method.reset()
            for z, batch in zip(logits, batches, strict=True):
                method.adapt_logits(z, batch)

        l_med, l_min = timed(run_adapt_logits, args.repeats, args.clock)
        prepared, calls, ready = "-", "-", None
        if getattr(method, "encoder_", None) is not None and hasattr(method, "_adapt"):
            # the batches encoded in advance: the calibrator and the decider alone
            encoded = [method.encoder_.encode(b) for b in batches]
            logits64 = [np.asarray(z, dtype=np.float64) for z in logits]

            def run_core(encoded: list = encoded, logits64: list = logits64) -> None:
                method.reset()
                for z, batch in zip(logits64, encoded, strict=True):
                    method._adapt(z, batch, None)

            c_med, c_min = timed(run_core, args.repeats, args.clock)
            prepared = f"{us(c_med):.2f} / {us(c_min):.2f}"
            # the calls of the middle batch, the stream before it already adapted
            method.reset()
            middle = len(batches) // 2
            for z, batch in zip(logits[:middle], batches[:middle], strict=True):
                method.adapt_logits(z, batch)
            numpy_calls, all_calls = calls_of(
                functools.partial(method.adapt_logits, logits[middle], batches[middle])
            )
            calls = f"{numpy_calls} / {all_calls}"
            ready = Prepared(encoded, logits64, c_med, numpy_calls)
        core.append(
            f"| {name} | {size} | {us(l_med):.2f} / {us(l_min):.2f} | {prepared} | {calls} |"
        )
        if hasattr(AdapTable, "partial_fit") and args.preset == "default":

            def run_labelled(batches: list = batches, labels: list = labels) -> None:
                method.reset()
                for batch, answer in zip(batches, labels, strict=True):
                    method.partial_fit(batch, answer["y"].to_numpy())

            p_med, p_min = timed(run_labelled, args.repeats, args.clock)
            by_id = by_row_id(method, batches, labels, args.repeats, args.clock)
            late, parts = with_late_labels(method, model, batches, labels, args.repeats, args.clock)
            labelled.append(
                f"| {name} | {size} | {us(p_med):.2f} / {us(p_min):.2f} | {by_id(us)} | {late} "
                f"| {parts} |"
            )
        if args.device != "cpu":
            on_device.append(adaptation_on_device(name, size, method, logits, ready, args))
        print(f"  {name} batch {size}: done", file=sys.stderr, flush=True)
    fit = None if args.no_fit else measure_fit(name, args.data_dir, args.cache_dir, args.preset)
    return end_to_end, core, labelled, on_device, fit


def launch_seconds(device: torch.device) -> float:
    """Seconds of one small in-place op on ``device``, synchronised once after 2,000: what each
    array operation of a port of the adaptation to the device would cost at least."""
    synchronise = torch.cuda.synchronize if device.type == "cuda" else lambda: None
    x = torch.ones((64, 2), device=device)
    for _ in range(100):
        x.mul_(1.0)
    synchronise()
    start = time.perf_counter()
    for _ in range(2000):
        x.mul_(1.0)
    synchronise()
    return (time.perf_counter() - start) / 2000


class Prepared(NamedTuple):
    """What the core table measured at one batch size, reused by the device table: the
    batches encoded in advance, the logits as float64, the seconds of the whole adaptation on
    them (median), and the numpy calls of one batch."""

    encoded: list
    logits64: list
    core_seconds: float
    numpy_calls: int


def adaptation_on_device(
    name: str,
    size: int,
    method: Any,
    logits: list,
    ready: Prepared | None,
    args: argparse.Namespace,
) -> str:
    """One row of the table that asks whether the adaptation should run where the logits are.

    Per row, for the same batches: the logits copied from the device to the host (what the
    adapter pays to run on the CPU); the whole adaptation on the CPU (the core table's
    prepared-batches time); the floor of a port that issues the same array operations on
    ``args.device`` (the numpy calls of one batch times one kernel launch; the ufuncs and
    operators the call count does not see would add to it); where the calibrator is the graph
    network, its temperatures as the adapter computes them (the numpy kernel on the CPU) and
    the same network's torch forward on the device with its inputs already there
    (synchronised). Dashes where the estimator exposes no prepared path.
    """
    if ready is None:
        return f"| {name} | {size} | - | - | - | - | - |"
    device = torch.device(args.device)
    rows = sum(len(z) for z in logits)
    us = lambda seconds: f"{1e6 * seconds / rows:.3f}"  # noqa: E731
    synchronise = torch.cuda.synchronize if device.type == "cuda" else lambda: None
    on_device = [torch.as_tensor(z, dtype=torch.float32, device=device) for z in logits]
    synchronise()

    def copy_to_host() -> None:
        for z in on_device:
            z.to("cpu", torch.float64).numpy()

    copied, _ = timed(copy_to_host, args.repeats, args.clock)
    floor = us(ready.numpy_calls * launch_seconds(device) * len(logits))
    start = f"| {name} | {size} | {us(copied)} | {us(ready.core_seconds)} | {floor} |"
    calibrator = getattr(method, "calibrator_", None)
    net = getattr(calibrator, "net", None)
    if net is None or getattr(calibrator, "kernel", None) is None:
        return start + " - | - |"
    logits64 = ready.logits64
    trends = [calibrator.shift_trend(batch) for batch in ready.encoded]

    def kernel_on_cpu() -> None:
        for trend, z in zip(trends, logits64, strict=True):
            calibrator.kernel(trend.numeric, trend.category_index, z)

    device_net = copy.deepcopy(net).to(device).eval()
    graphs = []
    for trend, z in zip(trends, logits64, strict=True):
        packed = Rows.from_arrays(trend, z).pack(net.width)
        graphs.append(
            tuple(t.to(device) for t in (packed.numeric, packed.category_index, packed.logits))
            + (packed.mask.to(device),)
        )

    def net_on_device() -> None:
        with torch.inference_mode():
            for numeric, category_index, z, mask in graphs:
                device_net(numeric, category_index, z, mask)
        synchronise()

    kernel, _ = timed(kernel_on_cpu, args.repeats, args.clock)
    forward, _ = timed(net_on_device, args.repeats, args.clock)
    return start + f" {us(kernel)} | {us(forward)} |"


def by_row_id(
    method: Any, batches: list, labels: list, repeats: int, clock: str
) -> Callable[[Callable[[float], float]], str]:
    """``partial_fit(None, y, rows=ids)`` (labels of predicted rows, by id alone: the adapter's
    kept scores, no model call), seconds median / min over ``repeats`` passes, each after the
    same rows were predicted from ``reset()`` (untimed); a formatter of the two, or "-" where
    this AdapTable does not take ``X=None``."""
    now = CLOCKS[clock]
    times = []
    for _ in range(repeats + 1):  # the first pass warms up
        method.reset()
        ids = []
        first = 0
        for batch in batches:
            method.predict_proba(batch)
            ids.append(np.arange(first, first + len(batch)))
            first += len(batch)
        start = now()
        try:
            for rows, answer in zip(ids, labels, strict=True):
                method.partial_fit(None, answer["y"].to_numpy(), rows=rows)
        except (TypeError, ValueError, AttributeError):
            return lambda us: "-"
        times.append(now() - start)
    median, least = float(np.median(times[1:])), float(np.min(times[1:]))
    return lambda us: f"{us(median):.2f} / {us(least):.2f}"


#: the labelled path's parts the late-labels column breaks its time into: (module, function)
LABELLED_PARTS = {
    "refits": ("adaptable.core.labels.labelled_choice", "fit_correction"),
    "comparisons": ("adaptable.core.labels.labelled_choice", "compare_rules"),
    "rule weights": ("adaptable.core.recommended.labelled_rows", "plugin_weights"),
}


def timed_parts(clock: str) -> tuple[dict[str, float], Callable[[], None]]:
    """Wrap :data:`LABELLED_PARTS` so that each call adds its time to a dict (seconds);
    returns the dict and a function that puts the originals back. Internal names: a part the
    package no longer has is left out."""
    now = CLOCKS[clock]
    spent: dict[str, float] = {}
    undo = []
    for part, (module_name, function) in LABELLED_PARTS.items():
        module = importlib.import_module(module_name)
        original = getattr(module, function, None)
        if original is None:
            continue

        def wrapped(*a: Any, _f: Callable = original, _part: str = part, **k: Any) -> Any:
            start = now()
            try:
                return _f(*a, **k)
            finally:
                spent[_part] = spent.get(_part, 0.0) + now() - start

        setattr(module, function, wrapped)
        undo.append((module, function, original))

    def restore() -> None:
        for module, function, original in undo:
            setattr(module, function, original)

    return spent, restore


def with_late_labels(
    method: Any, model: Any, batches: list, labels: list, repeats: int, clock: str
) -> tuple[str, str]:
    """``predict_proba`` while labels come back (5 % of each batch's rows by row id, 10
    batches late), us per row over the batches decided with 10 or more labelled rows, and
    the model's own on those batches: "adapter (model), x ratio" of the medians over
    ``repeats`` passes (a first pass warms up); "-" where no batch had 10 labels. Then the
    breakdown, us per row: the score correction's refits, the rule comparisons and the
    candidate rules' plug-in weights, in the same passes (their medians)."""
    now = CLOCKS[clock]
    draw = np.random.default_rng(0)
    chosen = [np.flatnonzero(draw.random(len(b)) < 0.05) for b in batches]
    adapter_times, model_times, rows = [], [], 0
    part_times: list[dict[str, float]] = []
    parts, restore = timed_parts(clock)
    for _ in range(repeats + 1):
        method.reset()
        first, starts, spent, spent_model, rows = 0, [], 0.0, 0.0, 0
        parts.clear()
        for t, batch in enumerate(batches):
            if t >= 11:  # the labels of batch t - 11 arrive
                back = t - 11
                ids = starts[back] + chosen[back]
                method.partial_fit(None, labels[back]["y"].to_numpy()[chosen[back]], rows=ids)
            starts.append(first)
            first += len(batch)
            counted = method.decider_.feedback.n_labelled >= 10
            start = now()
            method.predict_proba(batch)
            middle = now()
            model.predict_proba(batch)
            if counted:
                spent += middle - start
                spent_model += now() - middle
                rows += len(batch)
        adapter_times.append(spent)
        model_times.append(spent_model)
        part_times.append(dict(parts))
    restore()
    if rows == 0:
        return "-", "-"
    adapter = float(np.median(adapter_times[1:])) / rows * 1e6
    own = float(np.median(model_times[1:])) / rows * 1e6
    breakdown = " / ".join(
        f"{float(np.median([p.get(part, 0.0) for p in part_times[1:]])) / rows * 1e6:.1f}"
        for part in LABELLED_PARTS
    )
    return f"{adapter:.1f} ({own:.1f}), x {adapter / own:.2f}", breakdown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["heloc", "hospital_readmission"])
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=list(BATCH_SIZES))
    parser.add_argument("--rows", type=int, default=8192, help="rows timed per repeat")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--data-dir", default=None, help="holds heloc/ (default: $ADAPTABLE_DATA_DIR)"
    )
    parser.add_argument("--cache-dir", default=None, help="model cache (default: the user cache)")
    parser.add_argument(
        "--preset",
        choices=("default", "paper"),
        default="default",
        help="AdapTable(preset=...): the recommended adapter (default) or the paper's algorithm",
    )
    parser.add_argument(
        "--scenario",
        default="natural",
        help="the rows: the shuffled out-of-domain test split (natural), or the stream of a "
        "scenario of adaptable.shifts (e.g. prior_0.1: a pure label shift, which keeps the "
        "default preset's label-shift branch at work)",
    )
    parser.add_argument(
        "--label-shift-level",
        type=float,
        default=0.05,
        help="default preset: AdapTable(label_shift_level=...) (1.0: no likelihood-ratio test)",
    )
    parser.add_argument(
        "--fallback",
        choices=("argmax", "plugin", "between"),
        default="argmax",
        help="default preset: AdapTable(fallback=...) (plugin / between: the opt-in decisions)",
    )
    parser.add_argument(
        "--stream-check",
        choices=("model", "both"),
        default=None,
        help="default preset: AdapTable(stream_check=...) (default: the adapter's own default)",
    )
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="what the timings read: wall time, or the process's CPU time (steadier on a "
        "machine shared with other work; fit is timed on the wall clock either way)",
    )
    parser.add_argument(
        "--device",
        default="cpu",
        help="where the source model runs (cpu, cuda); with cuda, a table of the calibrator "
        "on the device beside the CPU adaptation",
    )
    parser.add_argument("--no-fit", action="store_true", help="skip the fit table")
    parser.add_argument("--fit-child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fit_child:
        fit_child(args.fit_child, args.data_dir, args.cache_dir, args.preset)
        return
    torch.set_num_threads(1)
    print(
        f"AdapTable(preset={args.preset!r}, fallback={args.fallback!r}, "
        f"stream_check={args.stream_check or AdapTable().stream_check!r}); "
        f"torch threads {torch.get_num_threads()}, {args.repeats} repeats, >= {args.rows} rows "
        f"per repeat, {args.clock} clock, scenario {args.scenario}, "
        f"load average at start {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
    )
    tables: dict[str, list[str]] = {"e2e": [], "core": [], "labelled": [], "device": [], "fit": []}
    for name in args.datasets:
        e2e, core, labelled, on_device, fit = bench_dataset(name, args)
        tables["e2e"] += e2e
        tables["core"] += core
        tables["labelled"] += labelled
        tables["device"] += on_device
        if fit is not None:
            tables["fit"].append(
                f"| {name} | {fit['seconds']:.2f} | {fit['rss_before']:.0f} | "
                f"{fit['peak']:.0f} | {fit['epochs']} |"
            )
    print(
        "\n### What a user pays: us per row, median and min over repeats; ratio, overhead: "
        "medians over pairs of runs\n"
    )
    print(
        "| dataset | batch | model (med) | model (min) | AdapTable (med) | AdapTable (min) | "
        "ratio | overhead / model | overhead us/row |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(tables["e2e"]))
    if tables["fit"]:
        print("\n### AdapTable.fit (own subprocess): wall time and resident memory\n")
        print("| dataset | fit s | RSS before fit MiB | peak RSS MiB | post-training epochs |")
        print("|---|---|---|---|---|")
        print("\n".join(tables["fit"]))
    print("\n### The adaptation alone: us per row, median / min; calls of one batch\n")
    print(
        "| dataset | batch | adapt_logits (precomputed logits) | calibrator + decider "
        "(prepared batches) | numpy calls / all calls per batch (adapt_logits) |"
    )
    print("|---|---|---|---|---|")
    print("\n".join(tables["core"]))
    print("\n### Labelled rows: AdapTable.partial_fit, us per row, median / min\n")
    if tables["labelled"]:
        print(
            "| dataset | batch | partial_fit(X, y) | partial_fit(None, y, rows=ids) | "
            "predict_proba with labels coming back (model's own), x model | of which "
            f"{' / '.join(LABELLED_PARTS)} |"
        )
        print("|---|---|---|---|---|---|")
        print("\n".join(tables["labelled"]))
    else:
        print("not measured (partial_fit is the default preset's)")
    if tables["device"]:
        print(f"\n### Where the adaptation runs: us per row (medians), model on {args.device}\n")
        print(
            "| dataset | batch | logits device -> host | adaptation on CPU (prepared) | "
            f"floor of a port to {args.device} (numpy calls x one launch) | "
            f"calibrator, numpy on CPU | calibrator, torch on {args.device} |"
        )
        print("|---|---|---|---|---|---|---|")
        print("\n".join(tables["device"]))
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
