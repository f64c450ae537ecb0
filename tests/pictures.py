"""Helpers of the picture tests: bar heights against the pipeline's stats."""

import warnings

from tf_input import viz
from tf_input.data import SkippedExamplesWarning


def bar_heights(figure):
    """`{mode: height}` of a length picture's efficiency bars."""
    bars = figure.axes[1]
    labels = [t.get_text() for t in bars.get_xticklabels()]
    return dict(zip(labels, (p.get_height() for p in bars.patches)))


def pipeline_efficiencies(texts, tokenizer, **options):
    """What `stats(make_dataset(...))` measures in each batching mode.

    (`count_batches=False` only skips the pass that counts the batches
    ahead: the batches are the same.)
    """
    from tf_input.data import make_dataset
    from tf_input.data import stats

    efficiencies = {}
    for mode in viz.BATCHINGS:
        with warnings.catch_warnings():  # blank lines are skipped
            warnings.simplefilter("ignore", SkippedExamplesWarning)
            dataset = make_dataset(
                texts, tokenizer, batching=mode, count_batches=False, **options
            )
        efficiencies[mode] = stats(dataset)["padding_efficiency"]
    return efficiencies
