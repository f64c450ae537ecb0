"""tokenizer.json options one by one, against Hugging Face `tokenizers`.

Each case builds a small byte-level BPE with HF (trained here in a fraction
of a second), gives it one normalizer, pre-tokenizer, added-token flag or
post-processor, saves it as a `tokenizer.json` and checks that
`load_tokenizer` gives HF's ids (`encode_batch`, with and without special
tokens), pairs' templates and `decode` on the adversarial set. The real
files of ../shared/data/llm are in test_loading.py; this file covers what
they do not use.
"""

import json

import pytest
import tensorflow as tf
import tokenizers as hf
from tokenizers import AddedToken
from tokenizers import Regex
from tokenizers import decoders
from tokenizers import normalizers
from tokenizers import pre_tokenizers
from tokenizers import processors

from tests.shared_data import requires_shared_data
from tests.tokenizers.test_byte_pair import ADVERSARIAL
from tf_input.tokenizers import BytePairTokenizer
from tf_input.tokenizers import load_tokenizer

TEXTS = ADVERSARIAL + [
    "Hello <mask> world <mask>  x <mask>",
    "a<sep>b <sep> c  <sep>  d<sep>",
    "HELLO Hello hello <CLS>HeLLo",
    "  leading and trailing  ",
    "DON'T 2024 12345 x-y--z 3.14",
    "Ünïcödé e\u0301 \ufb01 ① Ⅻ ＡＢＣ",
    "<|im_start|>user\nhi<|im_end|>",
]
CORPUS = TEXTS * 3 + [
    "The quick brown fox jumps over the lazy dog's back. " * 3,
    "Il était une fois 123 456 789, l'été à Paris.\n\n  Fin  ",
    "日本語と中文と한국어。 Ünïcödé ΑΒΓ δεζ мир",
]


@pytest.fixture(scope="module")
def trained():
    """(vocab, merges) of a 700-token byte-level BPE trained by HF."""
    tokenizer = hf.Tokenizer(hf.models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = hf.trainers.BpeTrainer(
        vocab_size=700,
        min_frequency=2,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(CORPUS, trainer)
    data = json.loads(tokenizer.to_str())
    return data["model"]["vocab"], data["model"]["merges"]


def build(trained, tmp_path, **parts):
    """An HF tokenizer from the trained model with `parts`, and ours."""
    vocab, merges = trained
    model = hf.models.BPE(
        vocab=dict(vocab),
        merges=[tuple(m.split(" ")) if isinstance(m, str) else tuple(m)
                for m in merges],
        ignore_merges=parts.pop("ignore_merges", False),
    )  # fmt: skip
    tokenizer = hf.Tokenizer(model)
    tokenizer.normalizer = parts.pop("normalizer", None)
    tokenizer.pre_tokenizer = parts.pop(
        "pre_tokenizer", pre_tokenizers.ByteLevel(add_prefix_space=False)
    )
    tokenizer.decoder = decoders.ByteLevel()
    added = parts.pop("added", [])
    if added:
        tokenizer.add_tokens(added)
    post = parts.pop("post_processor", None)
    if post is not None:
        tokenizer.post_processor = post
    load = parts.pop("load", True)
    assert not parts, parts
    path = tmp_path / "tokenizer.json"
    tokenizer.save(str(path))
    return tokenizer, load_tokenizer(path) if load else None


def check(reference, tokenizer, texts=TEXTS):
    batch = tf.constant(texts)
    got = tokenizer(batch).to_list()
    want = [
        e.ids for e in reference.encode_batch(texts, add_special_tokens=False)
    ]
    bad = [(t, g, w) for t, g, w in zip(texts, got, want) if g != w]
    assert not bad, f"{len(bad)}/{len(texts)} differ, first: {bad[0]!r}"
    ragged = tf.ragged.constant(got, tf.int32, ragged_rank=1)
    back = [b.decode("utf-8") for b in tokenizer.detokenize(ragged).numpy()]
    assert back == [
        reference.decode(ids, skip_special_tokens=False) for ids in got
    ]


# --- Normalizers ------------------------------------------------------------
@pytest.mark.parametrize(
    "normalizer",
    [
        normalizers.NFC(),
        normalizers.NFKC(),
        normalizers.Lowercase(),
        normalizers.Replace(Regex(r"\s+"), " "),
        normalizers.Prepend("▁"),
        normalizers.Strip(),
        normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()]),
        *(
            pytest.param(n, marks=pytest.mark.slow)
            for n in (
                normalizers.NFD(),
                normalizers.NFKD(),
                normalizers.Replace("ll", "L"),
                normalizers.Replace(Regex(r"[0-9]"), "#\\0"),
                normalizers.Strip(left=False, right=True),
            )
        ),
    ],
    ids=lambda n: (
        json.loads(n.__getstate__())["type"]
        + json.dumps(json.loads(n.__getstate__()))[-30:]
    ),
)
def test_normalizer(trained, tmp_path, normalizer):
    check(*build(trained, tmp_path, normalizer=normalizer))


@requires_shared_data
def test_precompiled_and_strip_accents(trained, tmp_path):
    # The normalizers of SentencePiece files work in any tokenizer.json.
    from tests.tokenizers import unigram_json

    proto = unigram_json.read_proto("albert")
    normalizer = normalizers.Sequence(
        [
            normalizers.NFKD(),
            normalizers.StripAccents(),
            normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap),
        ]
    )
    texts = TEXTS + ["\ufb01 \u2460 \uff21\u0301 \uff76\u3099 \r\n x\u00a0y"]
    check(*build(trained, tmp_path, normalizer=normalizer), texts)


def test_lowercase_final_sigma_nul_and_new_capitals(trained, tmp_path):
    texts = ["ΣΑΣ ΑΣ Σ", "a\x00B\x00", "\x00", "Ⱟ 𐖔 Ꟑ", "İ I ẞ"]
    check(*build(trained, tmp_path, normalizer=normalizers.Lowercase()), texts)


# --- Pre-tokenizers ---------------------------------------------------------
def _split(pattern, behavior, invert=False):
    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(pattern, behavior, invert=invert),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )


@pytest.mark.parametrize(
    "behavior",
    [
        "removed",
        "isolated",
        "merged_with_previous",
        "merged_with_next",
        "contiguous",
    ],
)
@pytest.mark.parametrize("invert", [False, True])
@pytest.mark.parametrize(
    "pattern",
    [
        Regex(r"[a-z]+|\d"),
        pytest.param("ll", marks=pytest.mark.slow),
        pytest.param(Regex(r"\p{P}"), marks=pytest.mark.slow),
        pytest.param(" ", marks=pytest.mark.slow),
    ],
    ids=["words-digits", "ll", "punctuation", "space"],
)
def test_split_behaviors(trained, tmp_path, pattern, behavior, invert):
    pre = _split(pattern, behavior, invert)
    one_class = pattern == " " or (
        isinstance(pattern, Regex) and "|" not in _regex_text(pattern)
    )
    if behavior == "contiguous" and not one_class:
        with pytest.raises(ValueError, match="only supported for a pattern"):
            build(trained, tmp_path, pre_tokenizer=pre)
        return
    check(*build(trained, tmp_path, pre_tokenizer=pre))


def _regex_text(regex):
    return json.loads(
        json.dumps(
            json.loads(pre_tokenizers.Split(regex, "isolated").__getstate__())
        )
    )["pattern"]["Regex"]


@pytest.mark.parametrize(
    "pattern",
    [
        # The lookahead tail after alternatives that can / cannot hold
        # whitespace runs (cut everywhere, or not before \r and \n).
        r"\p{L}+|\p{N}|\s+(?!\S)|\s+",
        r"\p{L}+| ?[^\s\p{L}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
        r"(?i:'s|'t)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|\s+(?!\S)|\s+",
        r"[\p{Lu}\p{Lt}]*[\p{Ll}\p{Lm}]+|\p{N}+|\s+(?!\S)|\s+",
    ],
)
def test_split_regexes_with_the_lookahead(trained, tmp_path, pattern):
    pre = _split(Regex(pattern), "isolated")
    texts = TEXTS + [" \n\n  x", "a \r\n  b", "x\t\t\n y", "  \n", "z  "]
    check(*build(trained, tmp_path, pre_tokenizer=pre), texts)


def test_a_lookahead_that_cannot_be_cut_is_an_error(trained, tmp_path):
    # `\s\s` holds two whitespace characters without ever matching every
    # run: neither cutting nor leaving the runs alone is exact.
    pre = _split(Regex(r"a\s\sb|\s+(?!\S)|\s+"), "isolated")
    with pytest.raises(ValueError, match="cannot be translated exactly"):
        build(trained, tmp_path, pre_tokenizer=pre)


@pytest.mark.parametrize("individual", [True, False])
def test_digits(trained, tmp_path, individual):
    pre = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=individual),
            pre_tokenizers.ByteLevel(add_prefix_space=False),
        ]
    )
    check(*build(trained, tmp_path, pre_tokenizer=pre))


@pytest.mark.parametrize("use_regex", [True, False])
def test_byte_level_with_prefix_space(trained, tmp_path, use_regex):
    pre = pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=use_regex)
    reference, ours = build(trained, tmp_path, pre_tokenizer=pre)
    check(reference, ours)
    check(reference, ours, ["", "x", " x"])


def test_whitespace_split(trained, tmp_path):
    pre = pre_tokenizers.Sequence(
        [
            pre_tokenizers.WhitespaceSplit(),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    check(*build(trained, tmp_path, pre_tokenizer=pre))


# --- Model options ----------------------------------------------------------
def test_ignore_merges(trained, tmp_path):
    """Llama 3's option: a word that is a token is taken whole, also when
    its merges would have made something else."""
    vocab, merges = trained
    vocab = dict(vocab)
    # Tokens BPE never reaches from these merges: only ignore_merges finds
    # them.
    for word in ("Ġquick", "Ġbrown", "Ġfox", "Ġlazy", "Ġworld"):
        if word not in vocab:
            vocab[word] = len(vocab)
    for ignore in (False, True):
        reference, ours = build((vocab, merges), tmp_path, ignore_merges=ignore)
        check(reference, ours, TEXTS + ["the quick brown fox world"])
        assert ours.ignore_merges is ignore


def test_merges_as_pairs_and_as_strings(trained, tmp_path):
    reference, ours = build(trained, tmp_path)
    data = json.loads((tmp_path / "tokenizer.json").read_text("utf-8"))
    data["model"]["merges"] = [" ".join(m) for m in data["model"]["merges"]]
    (tmp_path / "tokenizer.json").write_text(json.dumps(data), "utf-8")
    check(reference, load_tokenizer(tmp_path / "tokenizer.json"))


# --- Added tokens -----------------------------------------------------------
@pytest.mark.parametrize(
    "flags",
    [
        {},
        {"lstrip": True, "rstrip": True},
        {"normalized": True},
        {"special": True},
        pytest.param({"lstrip": True}, marks=pytest.mark.slow),
        pytest.param({"rstrip": True}, marks=pytest.mark.slow),
    ],
    ids=str,
)
def test_added_token_flags(trained, tmp_path, flags):
    special = flags.pop("special", False)
    added = [
        AddedToken("<mask>", special=special, **flags),
        AddedToken("<sep>", special=True),
        AddedToken("hello", special=False, normalized=True),
    ]
    reference, ours = build(
        trained, tmp_path, added=added, normalizer=normalizers.Lowercase()
    )
    check(reference, ours)


def test_split_special_tokens(trained, tmp_path):
    added = [
        AddedToken("<sep>", special=True),
        AddedToken("<mask>", special=False),
        AddedToken("sep>", special=False),
    ]
    reference, _ = build(trained, tmp_path, added=added, load=False)
    reference.encode_special_tokens = True
    ours = load_tokenizer(
        tmp_path / "tokenizer.json", split_special_tokens=True
    )
    check(reference, ours)


def test_single_word(trained, tmp_path):
    """A single_word token is only found between non-word characters
    (Rust's `\\w`: letters, marks, digits, connectors, circled letters)."""
    added = [
        AddedToken("<mask>", single_word=True),
        AddedToken("ab", single_word=True, normalized=False),
        AddedToken("<sep>", special=True),
    ]
    reference, ours = build(trained, tmp_path, added=added)
    texts = TEXTS + [
        "ab abc xab ab. (ab) ab<sep>ab <mask><mask> a<mask> <mask>b",
        "é<mask> ①<mask> Ⓐ<mask> _<mask> \u200d<mask> 1ab ab2 ab_",
        "<sep><mask><sep> ab\nab\tab",
    ]
    check(reference, ours, texts)


# --- Post-processors --------------------------------------------------------
def _post_processors(vocab_size):
    bos, eos = vocab_size, vocab_size + 1
    return {
        "llama3": processors.TemplateProcessing(
            single="<s> $A",
            pair="<s> $A <s>:1 $B:1",
            special_tokens=[("<s>", bos)],
        ),
        "template": processors.TemplateProcessing(
            single="<s> $A </s>",
            pair="<s> $A </s> $B:1 </s>:1",
            special_tokens=[("<s>", bos), ("</s>", eos)],
        ),
        "bert": processors.BertProcessing(("</s>", eos), ("<s>", bos)),
        "roberta": processors.RobertaProcessing(("</s>", eos), ("<s>", bos)),
        "sequence": processors.Sequence(
            [
                processors.ByteLevel(trim_offsets=False),
                processors.TemplateProcessing(
                    single="<s> $A",
                    pair="<s> $A $B",
                    special_tokens=[("<s>", bos)],
                ),
            ]
        ),
        "byte_level": processors.ByteLevel(),
    }


@pytest.mark.parametrize(
    "kind",
    [
        "llama3",
        "bert",
        "roberta",
        "sequence",
        pytest.param("template", marks=pytest.mark.slow),
        pytest.param("byte_level", marks=pytest.mark.slow),
    ],
)
def test_post_processor(trained, tmp_path, kind):
    vocab, _ = trained
    added = [AddedToken("<s>", special=True), AddedToken("</s>", special=True)]
    post = _post_processors(len(vocab))[kind]
    reference, _ = build(
        trained, tmp_path, added=added, post_processor=post, load=False
    )
    wrapped = load_tokenizer(
        tmp_path / "tokenizer.json", add_special_tokens=True
    )
    texts = ["hello world", "", "x <s> y"]
    want = [e.ids for e in reference.encode_batch(texts)]
    assert wrapped(tf.constant(texts)).to_list() == want
    a, b = "first", "second one"
    single, pair = reference.encode(a), reference.encode(a, b)
    ids_a, ids_b = (
        reference.encode(t, add_special_tokens=False).ids for t in (a, b)
    )

    def fill(template):
        ids, types = [], []
        for piece, type_id in template:
            part = {"$A": ids_a, "$B": ids_b}.get(piece, [piece])
            ids += part
            types += [type_id] * len(part)
        return ids, types

    templates = wrapped.templates()
    assert fill(templates["single"]) == (single.ids, single.type_ids)
    assert fill(templates["pair"]) == (pair.ids, pair.type_ids)


def test_config_round_trip_keeps_the_description(trained, tmp_path):
    added = [
        AddedToken("<mask>", lstrip=True),
        AddedToken("<sep>", special=True),
    ]
    reference, ours = build(
        trained,
        tmp_path,
        added=added,
        normalizer=normalizers.NFKC(),
        pre_tokenizer=_split(Regex(r"\p{L}+|\s+(?!\S)|\s+"), "isolated"),
    )
    config = ours.get_config()
    json.dumps(config)
    restored = BytePairTokenizer.from_config(config)
    assert restored.get_config() == config
    check(reference, restored)
