"""Hostile input: our tokenizers against their reference library, one line.

A served model that takes raw strings can be stalled by one request if a
tokenizer is super-linear on some input. Each row times one hostile line
(or batch), eagerly, ours (`tokenizer(line)`) against the library a user
would pick instead, on the same text:

* WordPiece (BERT uncased vocab) vs Hugging Face `tokenizers`
  `BertWordPieceTokenizer`;
* byte-level BPE (GPT-2) vs Hugging Face `tokenizers` `ByteLevelBPETokenizer`;
* SentencePiece unigram (sp-test-ja, ALBERT) and BPE (Mistral v0.3) vs
  `sentencepiece`.

Inputs (size in UTF-8 bytes, at three sizes for the slope):

* `control`: random C0/DEL/C1 control characters (1 MB);
* `marks`: combining marks in descending combining class, the worst case
  for a reordering insertion sort (1 MB = 500,000 marks);
* `long line`: the shared corpora's text joined by spaces into one line
  (5 MB);
* `emoji`: random emoji (200,000 = 0.8 MB);
* `random bytes`: uniformly random bytes, invalid UTF-8 (1 MB);
* `empty strings`: a batch of 10,000 empty strings; `empty batch`: a
  batch of none (one size);
* `one letter`: `"a"` repeated (400 KB), one long word of one letter;
* `digits`: random decimal digits, one pre-token for GPT-2 (`\\p{N}+`),
  and `letters`: random lowercase ASCII letters, one pre-token for every
  BPE (10 KB, 100 KB, 1 MB: the long chunk that once took one merge-loop
  step per distinct merge).

BPE families (`bpe_tokenizers`): besides GPT-2, Qwen 3 and cl100k
(byte-level, `tokenizer.json`) and Mistral v1 (SentencePiece-style
`tokenizer.json`, `MetaspaceBytePairTokenizer`) against Hugging Face
`tokenizers` on the same file. Unigram `tokenizer.json` (`UnigramTokenizer`):
ALBERT's model converted as `transformers` converts it, with and without
byte fallback, against Hugging Face `tokenizers`.

Ours is timed to its NumPy ids, the references to their Python lists
(each library's native result). Each time is the median of `--repeats`
calls (at least 51 for the empty
cases; each tokenizer's graph is traced before, on other text). The
ratio is ours / reference at the largest size; the slope is
log(t_large / t_small) / log(size_large / size_small) between the
smallest and largest size (1.0 is linear, 2.0 quadratic). "same ids"
says whether ours equals the reference (SentencePiece unigram differs
on lines past ~25,000 tokens: see `tf_input/tokenizers/sentencepiece/`).

Run: python benchmarks/bench_hostile.py [--repeats 3] [--quick]
"""

import argparse
import math
import os
import pathlib
import platform
import random
import statistics
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import sentencepiece  # noqa: E402
import tensorflow as tf  # noqa: E402
import tokenizers  # noqa: E402

import tf_input  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = pathlib.Path(
    os.environ.get("TF_INPUT_SHARED_DATA", ROOT.parent / "shared" / "data")
)
MB = 1_000_000
TARGET = 5.0
LOWER = "abcdefghijklmnopqrstuvwxyz"


def _fill(rng, pool, size):
    """Random characters of `pool` until `size` UTF-8 bytes."""
    out, total = [], 0
    while total < size:
        c = rng.choice(pool)
        out.append(c)
        total += len(c.encode("utf-8"))
    return "".join(out)


def _corpus_text():
    folder = DATA / "corpora"
    parts = [p.read_text("utf-8") for p in sorted(folder.glob("*.txt"))]
    return " ".join(" ".join(parts).split())


def inputs(quick):
    """`{name: (sizes, make(size) -> str or list of str)}`."""
    rng = random.Random(0)
    control = [chr(c) for c in [*range(32), *range(0x7F, 0xA0)]]
    emoji = [chr(c) for c in range(0x1F600, 0x1F650)]
    descending = "\u0345\u0301\u0316\u0334"  # classes 240, 230, 220, 1
    corpus = _corpus_text()
    scale = 0.1 if quick else 1.0

    def sizes(top):
        top = int(top * scale)
        return [top // 4, top // 2, top]

    def sizes_10x():
        return [int(n * scale) for n in (10_000, 100_000, MB)]

    def long_line(size):
        text = corpus * (size // len(corpus) + 1)
        return text[:size]

    def marks(size):
        return descending * (size // 8)

    def random_bytes(size):
        return bytes(rng.randrange(256) for _ in range(size))

    return {
        "control": (sizes(MB), lambda n: _fill(rng, control, n)),
        "marks": (sizes(MB), marks),
        "long line": (sizes(5 * MB), long_line),
        "emoji": (sizes(800_000), lambda n: _fill(rng, emoji, n)),
        "random bytes": (sizes(MB), random_bytes),
        "digits": (
            sizes_10x(),
            lambda n: "".join(rng.choice("0123456789") for _ in range(n)),
        ),
        "letters": (
            sizes_10x(),
            lambda n: "".join(rng.choice(LOWER) for _ in range(n)),
        ),
        "one letter": (sizes(400_000), lambda n: "a" * n),
        "empty strings": ([10_000], lambda n: [""] * n),
        "empty batch": ([0], lambda n: []),
    }


def tokenizers_under_test():
    bert = str(DATA / "bert" / "bert-base-uncased-vocab.txt")
    vocab_json = str(DATA / "gpt2" / "vocab.json")
    merges = str(DATA / "gpt2" / "merges.txt")
    hf_bert = tokenizers.BertWordPieceTokenizer(bert, lowercase=True)
    hf_bpe = tokenizers.ByteLevelBPETokenizer(vocab_json, merges)

    def hf(tokenizer):
        def encode(text):
            if isinstance(text, list):
                return [
                    e.ids
                    for e in tokenizer.encode_batch(
                        text, add_special_tokens=False
                    )
                ]
            if isinstance(text, bytes):
                text = text.decode("utf-8", "replace")
            return tokenizer.encode(text, add_special_tokens=False).ids

        return encode

    def spm(path):
        processor = sentencepiece.SentencePieceProcessor(model_file=path)

        def encode(text):
            return processor.encode(text)

        return encode

    out = {
        "WordPiece": (
            tf_input.WordPieceTokenizer.from_vocab_file(bert),
            "HF tokenizers",
            hf(hf_bert),
        ),
        "BPE (GPT-2)": (
            tf_input.BytePairTokenizer.from_files(vocab_json, merges),
            "HF tokenizers",
            hf(hf_bpe),
        ),
    }
    out.update(bpe_tokenizers(hf))
    out.update(unigram_tokenizers(hf))
    for name, file in [
        ("SentencePiece unigram (sp-test-ja)", "sp-test-ja.model"),
        ("SentencePiece unigram (ALBERT)", "albert-base-v2-spiece.model"),
        ("SentencePiece BPE (Mistral)", "mistral-7b-v0.3-tokenizer.model"),
    ]:
        path = str(DATA / "sentencepiece" / file)
        out[name] = (
            tf_input.SentencePieceTokenizer(path),
            "sentencepiece",
            spm(path),
        )
    return out


def bpe_tokenizers(hf):
    """The other BPE families, each `tokenizer.json` against HF
    `tokenizers` on the same file."""
    out = {}
    for name, folder in [
        ("BPE (Qwen 3)", "qwen3"),
        ("BPE (cl100k)", "cl100k"),
        ("BPE metaspace (Mistral v1)", "mistral_v1"),
    ]:
        path = str(DATA / "llm" / folder / "tokenizer.json")
        out[name] = (
            tf_input.load_tokenizer(path, add_special_tokens=False),
            "HF tokenizers",
            hf(tokenizers.Tokenizer.from_file(path)),
        )
    return out


def unigram_tokenizers(hf):
    """`UnigramTokenizer` (the `tokenizer.json` engine) on ALBERT's model
    converted as `transformers` converts it, with and without byte
    fallback (`tests/tokenizers/unigram_json.py`), against HF."""
    sys.path.insert(0, str(ROOT))
    from tests.tokenizers import unigram_json

    out = {}
    for name, kind in [
        ("Unigram json (ALBERT)", "albert"),
        ("Unigram json (ALBERT, byte fallback)", "bytes"),
    ]:
        reference = unigram_json.build("albert", kind)
        out[name] = (
            tf_input.tokenizers.UnigramTokenizer(reference.to_str()),
            "HF tokenizers",
            hf(reference),
        )
    return out


def ours_call(tokenizer):
    """Ours, timed to its native result: the ids as NumPy arrays (the
    references return theirs as Python lists, their native form)."""

    def call(text):
        if isinstance(text, list):
            ids = tokenizer(tf.constant(text, tf.string))
            return ids.flat_values.numpy(), ids.row_splits.numpy()
        return tokenizer(tf.constant(text)).numpy()

    return call


def as_lists(result):
    """Ours as the references' Python lists, outside the timing (a
    10,000-row `RaggedTensor.to_list()` takes ~4 ms by itself)."""
    if isinstance(result, tuple):
        values, splits = result
        return [values[a:b].tolist() for a, b in zip(splits, splits[1:])]
    return result.tolist()


def seconds(function, text, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = function(text)
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--quick", action="store_true", help="a tenth of the sizes"
    )
    parser.add_argument("--only", nargs="*", help="tokenizer name prefixes")
    parser.add_argument(
        "--cases", nargs="*", help="input names, e.g. 'empty batch'"
    )
    args = parser.parse_args()
    print(
        f"# Hostile input ({time.strftime('%Y-%m-%d')}): tensorflow "
        f"{tf.__version__}, tokenizers {tokenizers.__version__}, "
        f"sentencepiece {sentencepiece.__version__}, tf_input "
        f"{tf_input.__version__}, {platform.processor() or 'cpu'}, "
        f"nproc={os.cpu_count()}; eager, one line; medians of "
        f"{args.repeats}\n"
    )
    cases = inputs(args.quick)
    print(
        "| tokenizer | input | size | ours s | reference s | ratio |"
        " slope ours | slope ref | same ids |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    over = []
    for name, (ours, ref_name, reference) in tokenizers_under_test().items():
        if args.only and not any(name.startswith(p) for p in args.only):
            continue
        call = ours_call(ours)
        call("warm up: trace the tokenizer's graph")
        call(["warm up", "a batch"])
        for case, (sizes, make) in cases.items():
            if args.cases and case not in args.cases:
                continue
            rows = []
            for size in sizes:
                text = make(size)
                # The empty cases take micro- to milliseconds: more calls.
                n = max(args.repeats, 51) if "empty" in case else args.repeats
                a, got = seconds(call, text, n)
                b, want = seconds(reference, text, n)
                rows.append((size, a, b, as_lists(got) == want))
            size, a, b, same = rows[-1]
            if len(rows) > 1:
                span = math.log(size / rows[0][0])
                slope_a = math.log(a / rows[0][1]) / span
                slope_b = math.log(b / rows[0][2]) / span
                slopes = f"{slope_a:.2f} | {slope_b:.2f}"
            else:
                slopes = "- | -"
            ratio = a / b if b > 0 else float("nan")
            mark = " **" if ratio > TARGET else ""
            if mark:
                over.append(f"{name} on {case}")
            label = f"{size:,} strings" if "empty" in case else f"{size:,} B"
            print(
                f"| {name} | {case} | {label} | {a:.4f} | {b:.4f} | "
                f"{ratio:.1f}{mark} | {slopes} | {same} |",
                flush=True,
            )
    print(f"\nAbove {TARGET:g}x (**): {', '.join(over) or 'none'}.")


if __name__ == "__main__":
    main()
