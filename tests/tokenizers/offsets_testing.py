"""`tokenize_with_offsets` through a SavedModel, for the offsets tests of
every family."""

import json
import random
import subprocess
import sys

import tensorflow as tf

from tests.shared_data import corpora

# The child: loads the SavedModel with TensorFlow alone (plus TF Text when
# the graph needs it), and checks that tf_input never comes in.
_CHILD = """
import json, sys
{imports}
import tensorflow as tf
model = tf.saved_model.load(sys.argv[1])
out = model.offsets(tf.constant(json.loads(sys.argv[2])))
print(json.dumps({{k: v.numpy().tolist() for k, v in out.items()}}))
assert 'tf_input' not in sys.modules
assert {tf_text} or 'tensorflow_text' not in sys.modules
"""


def as_rows(out):
    """Ragged `(ids, starts, ends, words)` from `tokenize_with_offsets` ->
    per line `(ids, [(start, end), ...], words)`."""
    ids, starts, ends, words = (x.to_list() for x in out)
    return [
        (i, list(zip(s, e)), w) for i, s, e, w in zip(ids, starts, ends, words)
    ]


def reloaded_offsets(tokenizer, lines, folder, unit="char", tf_text=False):
    """`tokenizer.tokenize_with_offsets(lines, unit, return_word_ids=True)`
    exported in a SavedModel under `folder` and run in a fresh Python
    process that imports TensorFlow alone (and TF Text if `tf_text`):
    per line `(ids, [[start, end], ...], word_ids)`."""

    class Exported(tf.Module):
        def __init__(self):
            super().__init__()
            self.tokenizer = tokenizer

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def offsets(self, texts):
            ids, starts, ends, words = self.tokenizer.tokenize_with_offsets(
                texts, unit=unit, return_word_ids=True
            )
            return {
                "ids": ids.flat_values,
                "starts": starts.flat_values,
                "ends": ends.flat_values,
                "words": words.flat_values,
                "splits": ids.row_splits,
            }

    saved = folder / "saved"
    tf.saved_model.save(Exported(), str(saved))
    script = _CHILD.format(
        imports="import tensorflow_text" if tf_text else "", tf_text=tf_text
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(saved), json.dumps(lines)],
        capture_output=True,
        text=True,
        check=True,
        cwd=folder,
        env={"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"},
    )
    out = json.loads(result.stdout.strip().splitlines()[-1])
    splits = out["splits"]
    return [
        (
            out["ids"][a:b],
            [[s, e] for s, e in zip(out["starts"][a:b], out["ends"][a:b])],
            out["words"][a:b],
        )
        for a, b in zip(splits[:-1], splits[1:])
    ]


def byte_fallback_unigram_model():
    """The bytes of a unigram `.model` with byte fallback (botchan's, with
    the 256 `<0xXX>` pieces added): no shared model has one."""
    from sentencepiece import sentencepiece_model_pb2 as model_pb2

    from tests.shared_data import data_path

    proto = model_pb2.ModelProto()
    proto.ParseFromString(
        data_path(
            "sentencepiece", "sp-test-botchan-unigram-1000.model"
        ).read_bytes()
    )
    for b in range(256):
        piece = proto.pieces.add()
        piece.piece, piece.score, piece.type = f"<0x{b:02X}>", 0.0, 6
    proto.trainer_spec.byte_fallback = True
    return proto.SerializeToString()


def rows(tokenizer, lines, unit="char"):
    """`tokenize_with_offsets` of `lines` (word ids too) as `as_rows`."""
    return as_rows(
        tokenizer.tokenize_with_offsets(
            tf.constant(lines, tf.string), unit=unit, return_word_ids=True
        )
    )


def hf_rows(reference, lines):
    """HF `tokenizers`' ids, offsets and word ids of `lines`, as `rows`."""
    return [
        (e.ids, [tuple(o) for o in e.offsets], e.word_ids)
        for e in reference.encode_batch(lines, add_special_tokens=False)
    ]


def assert_parity(tokenizer, reference, lines):
    """Ids, character offsets and word ids equal HF's, and each byte span
    touches the characters of its character span (an empty one, none)."""
    got = rows(tokenizer, lines)
    want = hf_rows(reference, lines)
    bad = [(t, g, w) for t, g, w in zip(lines, got, want) if g != w]
    assert not bad, f"{len(bad)}/{len(lines)} lines differ, first: {bad[0]!r}"
    for line, (_, byte_spans, _), (_, char_spans, _) in zip(
        lines, rows(tokenizer, lines, "byte"), got
    ):
        raw = line.encode("utf-8")
        for (s, e), (cs, ce) in zip(byte_spans, char_spans):
            if e > s:
                text = raw[:e].decode("utf-8", "ignore")
                first = len(raw[:s].decode("utf-8", "ignore"))
                touched = (first, len(text) + (raw[:e] != text.encode()))
                assert touched == (cs, ce), (line, (s, e), (cs, ce))
            else:
                assert cs == ce, (line, (s, e), (cs, ce))


def sample(per_corpus, seed=0):
    """`per_corpus` lines drawn from each shared corpus."""
    rng = random.Random(seed)
    return [
        line
        for _, corpus in sorted(corpora().items())
        for line in rng.sample(corpus, min(per_corpus, len(corpus)))
    ]
