"""Lookup tables: built again in one process, they take no more memory.

TensorFlow never frees an eagerly built `StaticHashTable` (+7.7 MB of RSS
for each table of 200,000 int64 keys built and dropped), so a server that
rebuilds a tokenizer grew without bound. Tables of the same content now
share one resource. Measured in a fresh process, by RSS.
"""

import subprocess
import sys
import textwrap

import pytest
import tensorflow as tf

from tf_input.tokenizers._tables import lookup_table

REBUILDS = textwrap.dedent(
    """
    import gc
    import os
    import sys

    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np
    import tensorflow as tf

    from tf_input.tokenizers._tables import lookup_table

    def rss_mb():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6

    keys = np.arange(100_000, dtype=np.int64)
    text = [str(k) for k in range(50_000)]
    sizes = []
    for _ in range(int(sys.argv[1])):
        table = lookup_table(keys, keys * 3, -1, key_dtype=tf.int64)
        words = lookup_table(text, range(50_000), -1, key_dtype=tf.string)
        assert table.lookup(tf.constant([5], tf.int64)).numpy()[0] == 15
        assert words.lookup(tf.constant(["77"])).numpy()[0] == 77
        del table, words
        gc.collect()
        sizes.append(rss_mb())
    print(sizes[-1] - sizes[3])
    """
)


def test_rebuilt_tables_do_not_grow_the_process():
    builds = 12
    out = subprocess.run(
        [sys.executable, "-c", REBUILDS, str(builds)],
        capture_output=True,
        text=True,
        check=True,
    )
    growth = float(out.stdout.split()[-1])
    # Unshared, the two tables grow RSS by ~15 MB a build; shared, by 0.
    assert growth / (builds - 4) < 1.0, growth


def test_tables_of_other_content_do_not_mix():
    a = lookup_table([1, 2], [10, 20], -1, key_dtype=tf.int64)
    b = lookup_table([1, 2], [10, 21], -1, key_dtype=tf.int64)
    c = lookup_table([1, 2], [10, 20], -7, key_dtype=tf.int64)
    d = lookup_table(["1", "2"], [10, 20], -1, key_dtype=tf.string)
    e = lookup_table(["12"], [10], -1, key_dtype=tf.string)
    keys = tf.constant([1, 2, 3], tf.int64)
    assert a.lookup(keys).numpy().tolist() == [10, 20, -1]
    assert b.lookup(keys).numpy().tolist() == [10, 21, -1]
    # The default is the lookup's, not the shared table's.
    assert c.lookup(keys).numpy().tolist() == [10, 20, -7]
    assert d.lookup(tf.constant(["1", "12"])).numpy().tolist() == [10, -1]
    assert e.lookup(tf.constant(["1", "12"])).numpy().tolist() == [-1, 10]


def test_a_table_needs_one_value_per_key():
    with pytest.raises(ValueError, match="one value per key. Received: 2"):
        lookup_table([1, 2], [1], -1, key_dtype=tf.int64)
