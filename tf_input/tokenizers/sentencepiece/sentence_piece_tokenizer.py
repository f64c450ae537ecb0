"""`SentencePieceTokenizer`: the Keras layer for a SentencePiece `.model`.

The layer reads and checks the model, picks its graph (`_unigram_graph`
or `_core_unigram` for unigram models; `_bpe` for BPE models, in core ops
or on TF Text's op) and keeps the model as a Keras asset when saved.
TF Text is an optional dependency (`tf_input[text]`), imported only for
the graphs that run its ops.
"""

from __future__ import annotations

import base64
import binascii
import os

import keras
import numpy as np
import tensorflow as tf

from tf_input.tokenizers._assets import FROM_ASSETS
from tf_input.tokenizers._assets import VocabularyAsset
from tf_input.tokenizers.base import Tokenizer
from tf_input.tokenizers.sentencepiece._bpe import BpeGraph
from tf_input.tokenizers.sentencepiece._bpe import library_reason
from tf_input.tokenizers.sentencepiece._core_unigram import CoreUnigramGraph
from tf_input.tokenizers.sentencepiece._decoding import _Decoder
from tf_input.tokenizers.sentencepiece._model_file import _load_proto
from tf_input.tokenizers.sentencepiece._model_file import _parse_model
from tf_input.tokenizers.sentencepiece._proto import _BPE
from tf_input.tokenizers.sentencepiece._proto import _SPACE


def _tf_text_installed():
    try:
        import tensorflow_text  # noqa: F401  (registers its ops)
    except ImportError:
        return False
    return True


def _require_tf_text(why):
    if not _tf_text_installed():
        raise ImportError(
            f"SentencePieceTokenizer: {why}, and `tensorflow_text` is not "
            'installed. Install it with `pip install "tf_input[text]"` (or '
            "`pip install tensorflow-text`, the version matching TensorFlow "
            f"{tf.__version__})."
        )


class _Traced:
    """The layer's own graphs for eager calls, traced on first use.

    A plain (untracked) object, so that a SavedModel holds only the
    functions its exporter defines. Concrete functions are called directly,
    which keeps TensorFlow's retracing warning quiet when a process builds
    many tokenizers.
    """

    def __init__(self, layer):
        self._layer = layer
        self._tokenize = None
        self._detokenize = None

    def tokenize(self, texts):
        if self._tokenize is None:
            self._tokenize = tf.function(
                self._layer._tokenize_graph
            ).get_concrete_function(tf.TensorSpec([None], tf.string))
        return self._tokenize(texts)

    def detokenize(self, ids):
        if self._detokenize is None:
            spec = tf.RaggedTensorSpec(
                [None, None], tf.int32, 1, row_splits_dtype=tf.int64
            )
            self._detokenize = tf.function(
                self._layer._detokenize_graph
            ).get_concrete_function(spec)
        return self._detokenize(ids)


@keras.saving.register_keras_serializable(package="tf_input")
class SentencePieceTokenizer(VocabularyAsset, Tokenizer):
    """Tokenizes text with a SentencePiece model, id for id as `sentencepiece`.

    Gives exactly the ids of `sentencepiece` 0.2.3's
    `SentencePieceProcessor(model_file=...).encode(...)` for unigram and BPE
    models (normalization rules, user-defined pieces, byte fallback), using
    only TensorFlow (and optionally TF Text) ops, so it runs in
    `tf.data.Dataset.map`,
    `tf.function` and a SavedModel. Map it over batches of lines
    (`ds.batch(n).map(tokenizer)`), not over single lines. In a `.keras`
    file the model is an asset (`assets/sentencepiece.model`; the config
    holds its SHA-256), and a SavedModel holds it as constants, so neither
    needs another file. (A config whose `proto` is a path is refused: a
    config may not make Keras read a file.) BPE models without
    normalization rules (Mistral, Llama 2) run on core TensorFlow ops
    only: a SavedModel holding one loads with a plain `import tensorflow`.
    Unigram models run on TF Text's fast op when `tensorflow_text` is
    installed (`pip install "tf_input[text]"`), else on core ops only (the
    same ids, slower; see `_core_unigram` and `tf_text_unigram`). BPE
    models with a precompiled charsmap need TF Text's op. Loading a
    SavedModel that holds TF Text ops needs `import tensorflow_text` first;
    `uses_core_ops_only` says which.

    Invalid UTF-8 is handled as `sentencepiece` handles it: every byte that
    does not start a valid character becomes U+FFFD before normalization.
    Known limit: on a single line whose best-path score passes 1e5 (about
    25,000 tokens, some 100 KB of text) `sentencepiece` re-centres its
    float32 scores and may then break exact ties differently. Parity is
    guaranteed up to `1e5 / |min piece score - 10|` normalized characters
    in a line (each token covers one or more and scores at least that):
    3,729 for sp-test-ja, 4,249 for ALBERT.

    Args:
        proto: str, path-like or bytes. The path of a `.model` file, or its
            contents.
        add_special_tokens: bool. Put the model's BOS id before and its EOS
            id after each sequence (each only if the model defines it, as
            `encode(..., add_bos=True, add_eos=True)` does). Defaults to
            `False`.
        tf_text_unigram: bool or None. Run unigram models on TF Text's
            SentencePiece ops (`True`; an `ImportError` if `tensorflow_text`
            is not installed), or on core TensorFlow ops only (`False`:
            `uses_core_ops_only` is then true, and a SavedModel loads with
            a plain `import tensorflow`; the same ids, but 10-100x slower
            today and much slower on very long lines, see
            `docs/tokenizers.md`). `None` (the default): TF Text's ops if
            `tensorflow_text` can be imported, else core ops. BPE models
            ignore it.
        **kwargs: base `keras.layers.Layer` arguments, e.g. `name`.

    Call arguments:
        inputs: a string, a list of strings, or a string tensor of shape
            `[]` or `[N]`.

    Returns:
        int32 ids: a 1-D tensor for a scalar string, a `tf.RaggedTensor`
        `[N, None]` for a batch. `detokenize(ids)` equals `sentencepiece`'s
        `decode(ids)`.

    Example:

    >>> import io
    >>> import sentencepiece as spm
    >>> from tf_input.tokenizers.sentencepiece import SentencePieceTokenizer
    >>> model = io.BytesIO()
    >>> lines = ["the cat sat on the mat", "a dog sat on a log"] * 10
    >>> spm.SentencePieceTrainer.train(
    ...     sentence_iterator=iter(lines), model_writer=model, vocab_size=40,
    ...     hard_vocab_limit=False, minloglevel=2)
    >>> tokenizer = SentencePieceTokenizer(model.getvalue())
    >>> ids = tokenizer(["the cat sat", "a log"])
    >>> ids
    <tf.RaggedTensor [[3, 6, 9, 8, 3, 14, 4, 3, 7, 4], [3, 5, 18]]>
    >>> [tokenizer.id_to_token(i) for i in ids[1].numpy()]
    ['▁', 'a', '▁log']
    >>> tokenizer.detokenize(ids).numpy().tolist()
    [b'the cat sat', b'a log']
    >>> reference = spm.SentencePieceProcessor(model_proto=model.getvalue())
    >>> ids.to_list() == reference.encode(["the cat sat", "a log"])
    True
    """

    def __init__(
        self,
        proto: str | os.PathLike | bytes,
        *,
        add_special_tokens: bool = False,
        tf_text_unigram: bool | None = None,
        **kwargs,
    ):
        super().__init__(add_special_tokens=add_special_tokens, **kwargs)
        if tf_text_unigram is not None and not isinstance(
            tf_text_unigram, bool
        ):
            raise TypeError(
                "`tf_text_unigram` must be a bool or None. Received: "
                f"tf_text_unigram={tf_text_unigram!r} (of type "
                f"{type(tf_text_unigram).__name__})."
            )
        self.tf_text_unigram = tf_text_unigram
        self._init_asset()
        self.proto = None
        if proto is FROM_ASSETS:
            return  # `load_assets` sets the model (a `.keras` file).
        data, source = _load_proto(proto)
        self._set_proto(data, source)

    def _set_proto(self, data, source):
        model = _parse_model(data, source)
        self.proto = data
        self._model = model
        self._offsets_engine = None  # see `_core_unigram`
        self._special = {
            name: value
            for name, value in (
                ("pad", model.pad_id),
                ("unk", model.unk_id),
                ("bos", model.bos_id),
                ("eos", model.eos_id),
            )
            if value >= 0
        }
        self._start_ids = [model.bos_id] if model.bos_id >= 0 else []
        self._end_ids = [model.eos_id] if model.eos_id >= 0 else []
        # Byte fallback as `sentencepiece` 0.2.3 detects it: "<0x00>" exists
        # and the 256 byte pieces are consecutive.
        self._byte_ids = None
        # Which pieces start a word (begin with "▁"), for word ids.
        self._word_starts = np.array(
            [p.startswith(_SPACE) for p in model.pieces]
        )
        if "<0x00>" in model.pieces:
            start = model.pieces.index("<0x00>")
            expected = [f"<0x{b:02X}>" for b in range(256)]
            if model.pieces[start : start + 256] != expected:
                raise ValueError(
                    f"SentencePieceTokenizer could not read {source}: its "
                    "byte pieces <0x00>..<0xFF> are not consecutive."
                )
            self._byte_ids = list(range(start, start + 256))
        try:
            if model.model_type != _BPE and self._unigram_on_tf_text(source):
                # TF Text's ops, imported only here (see the class doc).
                from tf_input.tokenizers.sentencepiece import _unigram_graph

                self._engine = _unigram_graph.UnigramGraph(
                    data, model, self._byte_ids
                )
            elif model.model_type != _BPE:
                self._engine = CoreUnigramGraph(model, self._byte_ids)
            elif library_reason(model) is None:
                self._engine = BpeGraph(model, self._byte_ids)
            else:
                _require_tf_text(
                    f"{source} is a BPE model with "
                    f"{library_reason(model)}, which runs on TF Text's "
                    "SentencePiece op"
                )
                from tf_input.tokenizers.sentencepiece._bpe import LibraryBpe

                self._engine = LibraryBpe(data)
            self._decoder = _Decoder(model, self._byte_ids)
            with tf.init_scope():
                self._engine.warm_up()
            # Kept out of object tracking, so that a SavedModel holds only
            # the functions its exporter defines.
            self._traced = _Traced(self)
        except tf.errors.OpError as error:
            raise ValueError(
                f"SentencePieceTokenizer could not load {source}: "
                f"{error.message}"
            ) from None

    def _unigram_on_tf_text(self, source):
        if self.tf_text_unigram is None:
            return _tf_text_installed()
        if self.tf_text_unigram:
            _require_tf_text(
                f"tf_text_unigram=True runs {source} on TF Text's ops (pass "
                "tf_text_unigram=None or False to run it on core TensorFlow "
                "ops: the same ids, slower)"
            )
        return self.tf_text_unigram

    # --- Tokenizer API -------------------------------------------------------
    @tf.autograph.experimental.do_not_convert
    def _tokenize_batch(self, texts):
        self._check_ready()
        # Eagerly, run one traced graph rather than some 40 separate ops.
        if tf.executing_eagerly():
            return self._traced.tokenize(texts)
        return self._tokenize_graph(texts)

    @tf.autograph.experimental.do_not_convert
    def _detokenize_batch(self, ids):
        self._check_ready()
        if tf.executing_eagerly():
            return self._traced.detokenize(ids.with_row_splits_dtype(tf.int64))
        return self._detokenize_graph(ids)

    def _tokenize_graph(self, texts):
        return self._engine.tokenize(texts)

    def _tokenize_with_offsets_batch(self, texts):
        """The `sentencepiece` library's spans (`encode(...,
        return_type="proto")` `begin` / `end`). Unigram models: from the
        core-ops graph, whose normalizer says where each normalized
        character comes from (the library's `norm_to_orig`); BPE models:
        from TF Text's op around the library, its ids checked to be those
        of `tokenize`. A word starts at each piece that starts with "▁"
        (or the line's first piece): the words of the text as the library
        splits it at whitespace."""
        if self._model.model_type != _BPE:
            ids, starts, ends = self._core_unigram().tokenize_with_offsets(
                texts
            )
        else:
            ids, starts, ends = self._library_offsets(texts)
        # The word starts up to each piece, after the line's first piece.
        count = tf.cumsum(
            tf.cast(tf.gather(self._word_starts, ids.flat_values), tf.int64)
        )
        first = tf.gather(ids.row_splits, ids.value_rowids())
        words = ids.with_flat_values(count - tf.gather(count, first))
        return ids, starts, ends, words

    def _core_unigram(self):
        """The core-ops unigram graph (made on first use when the layer
        runs TF Text's ops: the same ids)."""
        if isinstance(self._engine, CoreUnigramGraph):
            return self._engine
        if self._offsets_engine is None:
            with tf.init_scope():
                self._offsets_engine = CoreUnigramGraph(
                    self._model, self._byte_ids
                )
        return self._offsets_engine

    def _library_offsets(self, texts):
        """BPE models: TF Text's sentencepiece op (the library itself),
        its ids checked in the graph to be those of `tokenize`."""
        _require_tf_text(
            "offsets of a SentencePiece BPE model come from the "
            "sentencepiece library, on TF Text's op"
        )
        from tf_input.tokenizers.sentencepiece._tf_text_ops import (
            run_library_with_offsets,
        )

        ids, starts, ends = run_library_with_offsets(self.proto, texts)
        if self._engine.uses_core_ops_only:
            # The spans are the library's; the ids must be `tokenize`'s.
            want = self._engine.tokenize(texts)
            same = tf.cond(
                tf.equal(tf.size(ids.flat_values), tf.size(want.flat_values)),
                lambda: (
                    tf.reduce_all(tf.equal(ids.row_splits, want.row_splits))
                    & tf.reduce_all(tf.equal(ids.flat_values, want.flat_values))
                ),
                lambda: tf.constant(False),
            )
            with tf.control_dependencies(
                [
                    tf.debugging.Assert(
                        same,
                        [
                            "SentencePieceTokenizer: TF Text's sentencepiece "
                            "op segmented a line unlike `tokenize`, so its "
                            "offsets do not fit; please report the text."
                        ],
                    )
                ]
            ):
                ids = ids.with_flat_values(tf.identity(ids.flat_values))
        return ids, starts, ends

    def _detokenize_graph(self, ids):
        return self._decoder(ids)

    @property
    def uses_core_ops_only(self) -> bool:
        """True if the graph needs no TF Text op (see the class doc)."""
        self._check_ready()
        return self._engine.uses_core_ops_only

    def get_vocabulary(self) -> list[str]:
        self._check_ready()
        return list(self._model.pieces)

    @property
    def special_tokens(self) -> dict[str, int]:
        self._check_ready()
        return dict(self._special)

    # --- Saving: the model is a Keras asset (`_assets`) ---------------------
    asset_name = "sentencepiece.model"
    digest_key = "proto_sha256"
    _asset_what = "model"

    def get_config(self):
        """The config names the model by its SHA-256; the model itself is a
        Keras asset (`save_assets`), not megabytes of base64 in
        `config.json`. In the same process `from_config` finds the model by
        its digest (layer cloning); from a `.keras` file, `load_assets`
        reads it."""
        return {
            **super().get_config(),
            "proto": None,
            "tf_text_unigram": self.tf_text_unigram,
            **self._asset_config(),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("proto"), str):
            config["proto"] = _proto_of_config_string(config["proto"])
        return super().from_config(config)

    def _waiting_for_asset(self):
        return self.proto is None

    def _asset_bytes(self):
        return self.proto

    def _load_asset_bytes(self, data, source):
        self._set_proto(data, source)

    @classmethod
    def _config_has_vocabulary(cls, config):
        return config.get("proto") is not None

    @classmethod
    def _vocabulary_kwargs(cls, data):
        return {"proto": data}


def _proto_of_config_string(proto):
    """A config's `proto` string: base64, as configs held the model before
    it became an asset. A path is refused: a config must not make
    `keras.saving.load_model` read arbitrary files."""
    try:
        return base64.b64decode(proto, validate=True)
    except (binascii.Error, ValueError):
        pass
    raise ValueError(
        "SentencePieceTokenizer: the config names the model file "
        f"{proto!r}, but a config may not make Keras read a file (a `.keras` "
        "file carries the model as an asset). Build the tokenizer from the "
        f"file instead: `SentencePieceTokenizer({proto!r})`."
    )
