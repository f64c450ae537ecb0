"""Forward + backward time of tf_input's layers next to keras-hub's.

Each pairing runs the same work on the same inputs: one training step of the
layer alone, `loss = reduce_sum(layer(x))` and the gradients of `loss` with
respect to the float input (when there is one) and every trainable weight,
inside one `tf.function`. Both modes are timed: plain graph
(`jit_compile=False`) and XLA (`jit_compile=True`).

Pairings (ours | keras-hub), at B=32, S=512, D=512, V=30522 (RoPE on
`[B, S, H=8, Dh=64]`):

* token_embedding: `TokenEmbedding(V, D, scale=False)` |
  `ReversibleEmbedding(V, D, mask_zero=True)`.
* token_and_position: `TokenEmbedding(V, D, scale=False)` then
  `LearnedPE(S)` | `TokenAndPositionEmbedding(V, S, D, mask_zero=True)`.
* sinusoidal_pe: `SinusoidalPE()(x)` | `x + SinePositionEncoding()(x)`.
* learned_pe: `LearnedPE(S)(x)` | `x + PositionEmbedding(S)(x)`.
* rotary: `RotaryEmbedding()(x)` | keras-hub `RotaryEmbedding()(x)`, both
  rotate-half with sequence axis 1 and feature axis -1.

keras-hub has no `sqrt(D)` scale, so ours runs with `scale=False`; both
compute the padding mask of id 0. Before timing, our weights are copied into
theirs and the two outputs are checked to agree.

Method: call each compiled step once to trace and compile (warm-up, not
timed). Each repetition makes `--calls` calls of ours and of theirs,
interleaved call by call (ABBA...), so load from other processes hits both
sides alike, and gives each side's mean ms per call. The table gives the
median over repetitions of ms per call, the ratio of the medians (ours /
keras-hub) and the range of the per-repetition ratios. Everything runs in one
process.

Memory: with `TF_CPU_ALLOCATOR_USE_BFC=true` in the environment, TensorFlow's
CPU allocator keeps statistics, and a second table gives the peak MiB
allocated during a step beyond what was allocated before it (activations,
temporaries and gradients; not the weights or the input), the highest of 3
steps. TensorFlow's default CPU allocator keeps none, so the table is left
out.

Run `make bench` or `python benchmarks/bench_layers.py [--quick]
[--repeats N] [--calls N] [--layers NAME ...]`.
"""

from __future__ import annotations

import os

os.environ["KERAS_BACKEND"] = "tensorflow"
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import datetime  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import keras  # noqa: E402
import keras_hub  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import tf_input  # noqa: E402

TARGET_RATIO = 1.05
BFC_ENV = "TF_CPU_ALLOCATOR_USE_BFC"

# keras-hub's TokenAndPositionEmbedding passes the token mask into its own
# PositionEmbedding, which warns that it drops it; the output keeps the mask.
warnings.filterwarnings("ignore", message=".*does not support masking.*")


@dataclasses.dataclass(frozen=True)
class Shapes:
    batch: int
    seq_len: int
    dim: int
    vocab: int
    heads: int
    head_dim: int


FULL = Shapes(batch=32, seq_len=512, dim=512, vocab=30522, heads=8, head_dim=64)
QUICK = Shapes(batch=4, seq_len=64, dim=64, vocab=1000, heads=2, head_dim=32)


@dataclasses.dataclass
class Side:
    """One implementation: `forward(x)`, its layers, and its input."""

    forward: object
    layers: list
    inputs: tf.Tensor


@dataclasses.dataclass
class Row:
    layer: str
    mode: str
    ours_ms: float
    theirs_ms: float
    ratios: list  # Per repetition, ours / theirs.
    ours_mib: float | None
    theirs_mib: float | None

    @property
    def ratio(self):
        return self.ours_ms / self.theirs_ms


# Each pairing builds both sides on the same input: (ours, theirs).


def token_embedding(s, rng):
    ids = _token_ids(s, rng)
    ours = tf_input.TokenEmbedding(s.vocab, s.dim, scale=False)
    theirs = keras_hub.layers.ReversibleEmbedding(
        s.vocab, s.dim, mask_zero=True
    )
    ours.build(ids.shape)
    theirs.build(ids.shape)
    theirs.embeddings.assign(ours.embeddings)
    return Side(ours, [ours], ids), Side(theirs, [theirs], ids)


def token_and_position(s, rng):
    ids = _token_ids(s, rng)
    token = tf_input.TokenEmbedding(s.vocab, s.dim, scale=False)
    position = tf_input.LearnedPE(s.seq_len)
    theirs = keras_hub.layers.TokenAndPositionEmbedding(
        s.vocab, s.seq_len, s.dim, mask_zero=True
    )
    token.build(ids.shape)
    position.build(ids.shape + (s.dim,))
    theirs.build(ids.shape)
    theirs.token_embedding.embeddings.assign(token.embeddings)
    theirs.position_embedding.position_embeddings.assign(
        position.position_embeddings
    )
    return (
        Side(lambda x: position(token(x)), [token, position], ids),
        Side(theirs, [theirs], ids),
    )


def sinusoidal_pe(s, rng):
    x = _floats(rng, (s.batch, s.seq_len, s.dim))
    ours = tf_input.SinusoidalPE()
    theirs = keras_hub.layers.SinePositionEncoding()
    return (
        Side(ours, [ours], x),
        Side(lambda x: x + theirs(x), [theirs], x),
    )


def learned_pe(s, rng):
    x = _floats(rng, (s.batch, s.seq_len, s.dim))
    ours = tf_input.LearnedPE(s.seq_len)
    theirs = keras_hub.layers.PositionEmbedding(s.seq_len)
    ours.build(x.shape)
    theirs.build(x.shape)
    theirs.position_embeddings.assign(ours.position_embeddings)
    return (
        Side(ours, [ours], x),
        Side(lambda x: x + theirs(x), [theirs], x),
    )


def rotary(s, rng):
    x = _floats(rng, (s.batch, s.seq_len, s.heads, s.head_dim))
    ours = tf_input.RotaryEmbedding(sequence_axis=1, feature_axis=-1)
    theirs = keras_hub.layers.RotaryEmbedding(sequence_axis=1, feature_axis=-1)
    return Side(ours, [ours], x), Side(theirs, [theirs], x)


PAIRINGS = {
    "token_embedding": token_embedding,
    "token_and_position": token_and_position,
    "sinusoidal_pe": sinusoidal_pe,
    "learned_pe": learned_pe,
    "rotary": rotary,
}
MODES = {"tf.function": False, "jit_compile": True}


def _token_ids(s, rng):
    ids = rng.integers(1, s.vocab, size=(s.batch, s.seq_len))
    return tf.constant(ids, "int32")


def _floats(rng, shape):
    return tf.constant(rng.standard_normal(shape), "float32")


def make_step(side, jit_compile):
    """One compiled forward + backward step: returns (loss, gradients)."""
    weights = [w for layer in side.layers for w in layer.trainable_weights]
    differentiable = side.inputs.dtype.is_floating

    @tf.function(jit_compile=jit_compile)
    def step(x):
        with tf.GradientTape() as tape:
            if differentiable:
                tape.watch(x)
            loss = tf.reduce_sum(side.forward(x))
        sources = ([x] if differentiable else []) + weights
        return loss, tape.gradient(loss, sources)

    return step


def check_same_output(name, ours, theirs):
    """Both sides must compute the same function (same weights)."""
    a = np.asarray(ours.forward(ours.inputs))
    b = np.asarray(theirs.forward(theirs.inputs))
    diff = float(np.max(np.abs(a - b)))
    # keras-hub forms the angles `p * w` naively in float32, tf_input reduces
    # them exactly: at position 511 the outputs differ by up to ~6e-5.
    if a.shape != b.shape or diff > 1e-3:
        raise AssertionError(
            f"{name}: ours and keras-hub disagree (shapes {a.shape} vs "
            f"{b.shape}, max |diff| {diff:.2e}); the comparison is not fair."
        )
    return diff


def time_call(step, inputs):
    """Seconds for one call, waiting for its result."""
    start = time.perf_counter()
    loss, _ = step(inputs)
    loss.numpy()
    return time.perf_counter() - start


def bench_pair(steps, sides, repeats, calls):
    """Median ms per call of ours and theirs, and the per-rep ratios.

    A repetition makes `calls` calls of each side, alternating one call of
    ours and one of theirs (ABBA...), and gives each side's mean ms per call
    over that window. The table reports the median over repetitions.
    """
    times = ([], [])
    for _ in range(repeats):
        elapsed = [0.0, 0.0]
        for call in range(calls):
            for i in (0, 1) if call % 2 == 0 else (1, 0):
                elapsed[i] += time_call(steps[i], sides[i].inputs)
        for i in (0, 1):
            times[i].append(elapsed[i] / calls * 1e3)
    ratios = [a / b for a, b in zip(*times)]
    return statistics.median(times[0]), statistics.median(times[1]), ratios


def memory_stats_available():
    try:
        tf.config.experimental.get_memory_info("CPU:0")
    except ValueError:  # "Allocator stats not available": default allocator.
        return False
    return True


def peak_step_mib(step, inputs, calls=3):
    """Peak MiB allocated during a call, beyond what was allocated before.

    The highest of `calls` calls: in graph mode the peak depends on the order
    in which the executor happens to run independent ops. Needs the BFC
    allocator (`TF_CPU_ALLOCATOR_USE_BFC=true`).
    """
    before = tf.config.experimental.get_memory_info("CPU:0")["current"]
    tf.config.experimental.reset_memory_stats("CPU:0")
    for _ in range(calls):
        step(inputs)[0].numpy()  # Outputs are freed before the next call.
    peak = tf.config.experimental.get_memory_info("CPU:0")["peak"]
    return (peak - before) / 2**20


def run_pairing(name, shapes, args, with_memory):
    """Check, compile, time (and measure) one pairing in both modes."""
    ours, theirs = PAIRINGS[name](shapes, np.random.default_rng(0))
    diff = check_same_output(name, ours, theirs)
    print(f"- {name}: outputs agree, max |diff| {diff:.1e}", flush=True)
    sides = (ours, theirs)
    rows = []
    for mode, jit_compile in MODES.items():
        steps = [make_step(side, jit_compile) for side in sides]
        for step, side in zip(steps, sides):
            step(side.inputs)[0].numpy()  # Trace and compile: warm-up.
        mib = [None, None]
        if with_memory:
            mib = [peak_step_mib(st, sd.inputs) for st, sd in zip(steps, sides)]
        ours_ms, theirs_ms, ratios = bench_pair(
            steps, sides, args.repeats, args.calls
        )
        rows.append(Row(name, mode, ours_ms, theirs_ms, ratios, *mib))
    return rows


def header(args, shapes):
    cpu = platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    cores = (
        len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else os.cpu_count()
    )
    allocator = (
        f"BFC ({BFC_ENV}=true)"
        if os.environ.get(BFC_ENV, "").lower() in ("1", "true")
        else "TensorFlow's default"
    )
    s = shapes
    return "\n".join(
        [
            "# tf_input layers vs keras-hub, forward + backward "
            f"({datetime.date.today().isoformat()})",
            "",
            f"- tensorflow {tf.__version__}, keras {keras.__version__}, "
            f"keras-hub {keras_hub.__version__}, tf_input "
            f"{tf_input.__version__}, Python {platform.python_version()}",
            f"- machine: {cpu}, nproc={cores}, {platform.system()}; "
            f"CPU allocator: {allocator}",
            f"- shapes: B={s.batch}, S={s.seq_len}, D={s.dim}, V={s.vocab}, "
            f"RoPE H={s.heads}, Dh={s.head_dim}; float32",
            f"- {args.repeats} repetitions x {args.calls} calls per side, "
            "interleaved call by call; median ms per call",
        ]
    )


def _over_target(row):
    # Judged on the ratio as printed, two decimals.
    return round(row.ratio, 2) > TARGET_RATIO


def print_tables(rows):
    print()
    print("| layer | mode | ours ms | keras-hub ms | ratio | per-rep ratios |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        flag = " **" if _over_target(r) else ""
        print(
            f"| {r.layer} | {r.mode} | {r.ours_ms:.2f} | {r.theirs_ms:.2f} "
            f"| {r.ratio:.2f}{flag} "
            f"| {min(r.ratios):.2f}-{max(r.ratios):.2f} |"
        )
    slow = [f"{r.layer} ({r.mode})" for r in rows if _over_target(r)]
    print()
    print(
        f"Above the target ratio {TARGET_RATIO} (**): "
        + (", ".join(slow) if slow else "none")
    )
    print()
    if rows[0].ours_mib is None:
        print(f"Peak step memory: not measured; set {BFC_ENV}=true to get it.")
        return
    print("Peak memory of a step (max of 3), MiB above what was allocated:")
    print()
    print("| layer | mode | ours MiB | keras-hub MiB |")
    print("|---|---|---:|---:|")
    for r in rows:
        print(
            f"| {r.layer} | {r.mode} | {r.ours_mib:.1f} | {r.theirs_mib:.1f} |"
        )


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small shapes and 3 repetitions: a smoke run, not a measurement",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="timed repetitions per side (default 7, 3 with --quick)",
    )
    parser.add_argument(
        "--calls",
        type=int,
        default=10,
        help="calls per side in one repetition (default 10)",
    )
    parser.add_argument(
        "--layers",
        nargs="+",
        choices=list(PAIRINGS),
        default=list(PAIRINGS),
        metavar="NAME",
        help=f"pairings to run, among: {', '.join(PAIRINGS)} (default all)",
    )
    args = parser.parse_args(argv)
    if args.repeats is None:
        args.repeats = 3 if args.quick else 7
    if args.repeats < 1 or args.calls < 1:
        parser.error("--repeats and --calls must be at least 1")
    return args


def main(argv=None):
    args = parse_args(argv)
    shapes = QUICK if args.quick else FULL
    print(header(args, shapes), flush=True)
    with_memory = memory_stats_available()
    start = time.perf_counter()
    rows = []
    for name in args.layers:
        rows += run_pairing(name, shapes, args, with_memory)
    print_tables(rows)
    print(f"\nTotal time {time.perf_counter() - start:.0f} s.")


if __name__ == "__main__":
    sys.exit(main())
