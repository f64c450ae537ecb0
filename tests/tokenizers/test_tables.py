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


def _saved_tables(folder):
    """The shared names of the tables a SavedModel creates at load."""
    from tensorflow.core.protobuf import saved_model_pb2

    model = saved_model_pb2.SavedModel()
    model.ParseFromString((folder / "saved_model.pb").read_bytes())
    return [
        node.attr["shared_name"].s
        for function in model.meta_graphs[0].graph_def.library.function
        for node in function.node_def
        if node.op == "HashTableV2"
    ]


def test_equal_tables_are_one_object_and_saved_once(tmp_path):
    # TensorFlow's loader gives each saved table a name of its own, so a
    # table saved twice would be created and kept twice by every load.
    a = lookup_table(["x", "y"], [1, 2], -1, key_dtype=tf.string)
    b = lookup_table(["x", "y"], [1, 2], -1, key_dtype=tf.string)
    c = lookup_table(["x", "y"], [1, 2], -5, key_dtype=tf.string)
    assert a is b
    assert c is not a  # another default: another lookup, one resource
    module = tf.Module()
    module.tables = [a, b, c]
    module.lookup = tf.function(
        lambda x: a.lookup(x) * 100 + b.lookup(x) * 10 + c.lookup(x),
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    tf.saved_model.save(module, str(tmp_path))
    assert len(_saved_tables(tmp_path)) == 2
    loaded = tf.saved_model.load(str(tmp_path))
    texts = tf.constant(["x", "y", "z"])
    assert loaded.lookup(texts).numpy().tolist() == [111, 222, -115]


def test_an_exported_tokenizer_saves_each_table_once(tmp_path):
    import keras

    from tf_input import WordPieceTokenizer
    from tf_input import export_text_model

    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "##b"]
    tokenizer = WordPieceTokenizer(vocabulary)
    ids = keras.Input((None,), dtype="int32", name="token_ids")
    hidden = keras.layers.Embedding(len(vocabulary), 4)(ids)
    pooled = keras.layers.GlobalAveragePooling1D()(hidden)
    model = keras.Model(ids, keras.layers.Dense(2)(pooled))
    export_text_model(model, tokenizer, tmp_path, max_length=8)
    names = _saved_tables(tmp_path)
    assert names and len(names) == len(set(names)), names
