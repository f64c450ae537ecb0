"""The `tf.data` steps the pipeline is made of, and how they run.

* `plain`: a graph function without AutoGraph.
* `batch_lines`: examples -> chunks of examples.
* `apply`: a chain of chunk functions in one parallel `map`.
* `map_inline`: a small per-batch function run on the calling thread.
* `with_end`: a dataset's elements flagged, then one end element, for the
  `scan`s that must flush their state when the epoch ends.
* `shuffle_chunks`: the order of chunks and of the rows in each.
* `dataset_options`: the options of the datasets `make_dataset` returns.
* `total`, `count`: a dataset's sum and length, read eagerly.
* `scan`: `Dataset.scan` that does not keep its function for the life of
  the process.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

try:  # tf.data's map datasets, for `use_inter_op_parallelism=False`
    from tensorflow.python.data.ops import map_op as _map_op
except ImportError:  # pragma: no cover - a TF without the module
    _map_op = None

AUTOTUNE = tf.data.AUTOTUNE


def plain(function):
    """`function` for `tf.data`, without AutoGraph: faster to trace, and
    the graph functions here have no Python control flow on tensors."""
    return tf.autograph.experimental.do_not_convert(function)


def total(dataset, zero):
    """The sum of `dataset`'s elements (tensors of `zero`'s shape), read
    a few thousand at a time.

    Not `Dataset.reduce`: called eagerly, it adds its reduce function to
    the eager context, which keeps it for the life of the process (0.1-0.2
    MB of RSS for every `make_dataset` call that counted its epoch,
    benchmarks/bench_rebuild.py)."""
    result = np.asarray(zero)
    for part in dataset.batch(4096):
        result = result + np.sum(part.numpy(), axis=0)
    return result


def count(dataset):
    """The number of elements of `dataset` (see `total`)."""
    ones = dataset.map(plain(lambda *_: tf.constant(1, tf.int64)))
    return int(total(ones, np.int64(0)))


def scan(dataset, initial_state, function):
    """`dataset.scan(initial_state, function)`.

    Called eagerly, `Dataset.scan` (TF 2.21) also adds its function, and
    the functions inside it, to the process's default graph, which keeps
    them for the life of the process: the `make_dataset` calls of a sweep
    or a server would add up (~0.1 MB each; benchmarks/bench_rebuild.py).
    The dataset holds its function itself, so those extra entries are
    removed here; under a graph (a `tf.function`), the scan's function
    belongs there and stays.
    """
    if not tf.executing_eagerly():
        return dataset.scan(initial_state, function)
    # `Graph._functions` and `_remove_function` are private: no public
    # call removes a function from a graph.
    graph = tf.compat.v1.get_default_graph()
    before = set(graph._functions)
    scanned = dataset.scan(initial_state, function)
    for name in set(graph._functions) - before:
        graph._remove_function(name)
    return scanned


def batch_lines(lines, size):
    """`lines.batch(size)`; examples of 1-D tensors (`(words, labels)`),
    whose lengths differ, batch into ragged `[size, (words)]`."""
    if any(spec.shape.rank for spec in tf.nest.flatten(lines.element_spec)):
        return lines.ragged_batch(size)
    return lines.batch(size)


def map_inline(dataset, function):
    """`dataset.map(function)`, the function's ops run on the calling thread.

    `Dataset.map` runs a function's ops on tf.data's inter-op thread pool,
    one hand-over per op; with `use_inter_op_parallelism=False` (an
    argument of tf.data's map op that `Dataset.map` does not expose) they
    run in turn, on the thread that asks for the element, with TF's
    single-threaded executor. The elements are the same; the cost is not:
    a per-batch cut costs a fraction inline of what it costs in a parallel
    `map` (see benchmarks/README.md). Only for small functions without
    control flow (that executor has no `Switch`); it falls back to
    `Dataset.map` if TF moves the class.
    """
    function = plain(function)
    if _map_op is not None:
        try:
            return _map_op._MapDataset(
                dataset,
                function,
                use_inter_op_parallelism=False,
                preserve_cardinality=True,
            )
        except (AttributeError, TypeError):  # pragma: no cover
            pass
    return dataset.map(function)


def chain(steps):
    """One function running `steps` in turn; the first takes the element's
    components, each next one the previous result."""

    def chained(*element):
        result = steps[0](*element)
        for step in steps[1:]:
            result = step(result)
        return result

    return chained


def with_epochs(chunks, steps, last, epochs):
    """`(dataset, function)`: `chunks` zipped with `epochs` (a dataset of
    int64 epoch keys), and the function that runs `steps` on a chunk and
    then `last(result, epoch)`."""
    inner = chain(steps) if steps else None

    def keyed(element, epoch):
        if inner is not None:
            if isinstance(element, tuple):
                element = inner(*element)
            else:
                element = inner(element)
        return last(element, epoch)

    return tf.data.Dataset.zip(chunks, epochs), keyed


def apply(chunks, steps, deterministic):
    return chunks.map(
        plain(chain(steps)),
        num_parallel_calls=AUTOTUNE,
        deterministic=deterministic,
    )


def shuffle_chunks(rows, buffer, seed, whole=()):
    """Shuffles the order of chunks, then the rows within each chunk.
    `whole`: the entries of a chunk that are not per row (left as they
    are)."""
    rows = rows.shuffle(buffer, seed=seed, reshuffle_each_iteration=True)
    seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True)

    def permute(rows, random):
        ids = rows["ids"]
        if isinstance(ids, tf.RaggedTensor):
            count = tf.cast(ids.nrows(), tf.int32)
        else:
            count = tf.shape(ids)[0]
        order = tf.random.experimental.stateless_shuffle(
            tf.range(count), seed=tf.stack([random, tf.constant(0, tf.int64)])
        )
        return {
            k: v if k in whole else tf.gather(v, order) for k, v in rows.items()
        }

    return tf.data.Dataset.zip(rows, seeds).map(
        plain(permute), num_parallel_calls=AUTOTUNE
    )


def with_end(dataset, end):
    """`(element, False)` for each element of `dataset`, then `(end, True)`.

    The flags come from a `zip`, not a `map`: no function for tf.data to
    set up per iterator, and no hand-over of ragged elements.
    """
    flags = tf.data.Dataset.from_tensors(False).repeat()
    return tf.data.Dataset.zip(dataset, flags).concatenate(
        tf.data.Dataset.from_tensors((end, True))
    )


def dataset_options(shard):
    """The `tf.data.Options` of the returned datasets.

    tf.data's default static rewrites (map parallelisation, prefetch
    injection, no-op elimination, ...) are off: they change nothing wanted
    in this pipeline, whose chunk maps are parallel already (an injected
    `prefetch` after the batches would only add a step per batch), but
    they rewrite (serialise, optimise and rebuild) the whole dataset graph
    on every new iterator, i.e. at the start of every epoch of `fit`:
    about a quarter of the first batch's time (bench_startup.py, in
    benchmarks/README.md). Only the options
    of these datasets change, nothing global; transformations a user adds
    on top are not rewritten either unless they turn the rewrites back on
    (`ds.with_options(options)` with
    `options.experimental_optimization.apply_default_optimizations =
    True`).
    """
    options = tf.data.Options()
    options.experimental_optimization.apply_default_optimizations = False
    if shard is not None:  # sharded already: tf.distribute must not again
        options.experimental_distribute.auto_shard_policy = (
            tf.data.experimental.AutoShardPolicy.OFF
        )
    return options
