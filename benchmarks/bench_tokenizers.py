"""Tokenizer throughput inside tf.data, against the tokenizers users pick.

For each family (WordPiece, byte-level BPE, SentencePiece, and the
`tokenizer.json` / tiktoken files of today's LLMs) and corpus, the same
lines go through:

* ours: `tf.data` from the lines, batches of 1024, `map(tokenizer)` with
  AUTOTUNE parallelism, prefetch;
* keras-hub's tokenizer of the same kind, in the same pipeline (not for the
  LLM files, which keras-hub cannot load with the right pre-tokenizer);
* the reference: Hugging Face `tokenizers` `encode_batch` (WordPiece, BPE,
  every `tokenizer.json`; the Unigram ones are made from shared-data
  `.model`s as transformers' converters make them, shared/data has none)
  or `sentencepiece`'s batch `encode`, on the same batches of 1024; for
  cl100k, o200k and Qwen 3 also tiktoken's `encode_ordinary_batch` (Rust,
  multi-threaded), with Qwen's vocabulary as tiktoken ranks.

`--offsets` instead compares, for GPT-2 (`vocab.json` + `merges.txt`),
Qwen 3, Mistral v0.1, BERT uncased and two Unigram files (ALBERT's and a
T5 / XLM-R style one, made from ALBERT's `.model`) (`tokenizer.json`) on
WikiText, the steady-state
throughput of `tokenize_with_offsets` (byte and character units, with
word ids) with that of `tokenize`, in the same `tf.data` pipeline, and
counts the lines whose ids, character offsets and word ids equal HF's.

`--construction` instead times `load_tokenizer` for o200k (its
`tokenizer.json` and its `.tiktoken` file) and the SentencePiece files
(Mistral v0.3 / v1 `.model`, Mistral v1 `tokenizer.json`, ALBERT, and a
Unigram `tokenizer.json` made from ALBERT's `.model`) in fresh
processes and reports the peak memory (`--families` filters these too).

One warm-up pass is excluded; each figure is the median of `--repeats`
passes, with the implementations interleaved so machine noise hits all of
them alike. It also counts lines whose ids equal the reference's (parity):
speed bought with wrong ids does not count.

Run: make bench (or python benchmarks/bench_tokenizers.py --help).
"""

import argparse
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras_hub  # noqa: E402
import numpy as np  # noqa: E402
import sentencepiece  # noqa: E402
import tensorflow as tf  # noqa: E402
import tiktoken  # noqa: E402
import tokenizers  # noqa: E402
from tiktoken.load import load_tiktoken_bpe  # noqa: E402

import tf_input  # noqa: E402
from tf_input import tokenizers as ours  # noqa: E402

# tiktoken's own patterns, shared with the tests; Qwen's is its tokenizer.json
# regex, which tiktoken (fancy-regex) runs as it is.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from tests.tiktoken_patterns import TIKTOKEN_PATTERNS  # noqa: E402
from tests.tokenizers import unigram_json  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = pathlib.Path(
    os.environ.get("TF_INPUT_SHARED_DATA", ROOT.parent / "shared" / "data")
)
BATCH = 1024


def read_lines(path):
    text = path.read_text(encoding="utf-8")
    return [x.rstrip("\r") for x in text.split("\n") if x.strip()]


def spread(lines, limit):
    """At most `limit` lines, taken evenly across `lines` (all languages)."""
    if not limit or len(lines) <= limit:
        return lines
    step = len(lines) / limit
    return [lines[int(i * step)] for i in range(limit)]


def corpora(limit):
    tatoeba = []
    for path in sorted((DATA / "corpora" / "tatoeba").glob("tatoeba.*")):
        tatoeba += read_lines(path)
    return {
        "wikitext": spread(
            read_lines(DATA / "corpora/wikitext-2-raw-test.txt"), limit
        ),
        "tinyshakespeare": spread(
            read_lines(DATA / "corpora/tinyshakespeare.txt"), limit
        ),
        "tatoeba-36": spread(tatoeba, limit),
        "hongloumeng": spread(
            read_lines(DATA / "corpora/hongloumeng.txt"), limit
        ),
    }


CLASSIC_CORPORA = ("wikitext", "tatoeba-36", "hongloumeng")
LLM_CORPORA = ("wikitext", "tinyshakespeare", "hongloumeng")
RANK_SPECIALS = {
    "cl100k": {"<|endoftext|>": 100257, "<|endofprompt|>": 100276},
    "o200k": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
}


def pipeline_runner(tokenizer, lines):
    """Returns f() that runs the tf.data pipeline and counts tokens."""

    # Built (and traced) once, as a training input pipeline is; each run is
    # one epoch over it, iterator start-up included.
    ds = tf.data.Dataset.from_tensor_slices(lines).batch(BATCH)
    ds = ds.map(tokenizer, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.prefetch(tf.data.AUTOTUNE)

    def run():
        tokens = 0
        for ids in ds:
            tokens += int(ids.flat_values.shape[0])
        return tokens

    return run


def steady_runner(function, lines, batches=24):
    """Returns f() -> lines/s of one iterator over the lines repeated to
    about `batches` batches, timed from its first batch: the throughput
    once the iterator runs, without its start-up (which tf.data pays per
    epoch: 0.15-0.3 s here, most of a 3-batch corpus). `function` is the
    tokenizer, or any map function whose first output is the ragged ids."""
    repeats = max(1, -(-batches * BATCH // len(lines)))
    ds = tf.data.Dataset.from_tensor_slices(lines).repeat(repeats)
    ds = ds.batch(BATCH).map(function, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.prefetch(tf.data.AUTOTUNE)

    def run():
        iterator = iter(ds)
        next(iterator)
        done = 0
        start = time.perf_counter()
        for out in iterator:
            ids = out[0] if isinstance(out, tuple) else out
            done += int(ids.nrows())
        return done / (time.perf_counter() - start)

    return run


def measure_offsets(repeats, limit, selected=None):
    """`tokenize_with_offsets` against `tokenize`, steady state, WikiText."""
    lines = corpora(limit)["wikitext"]
    llm = DATA / "llm"
    builds = {
        "GPT-2 (vocab.json + merges.txt)": lambda: (
            ours.BytePairTokenizer.from_files(
                DATA / "gpt2/vocab.json", DATA / "gpt2/merges.txt"
            ),
            tokenizers.ByteLevelBPETokenizer(
                str(DATA / "gpt2/vocab.json"), str(DATA / "gpt2/merges.txt")
            ),
        ),
        "tokenizer.json (Qwen 3)": lambda: (
            ours.load_tokenizer(llm / "qwen3/tokenizer.json"),
            tokenizers.Tokenizer.from_file(str(llm / "qwen3/tokenizer.json")),
        ),
        "Metaspace BPE tokenizer.json (Mistral v0.1)": lambda: (
            ours.load_tokenizer(llm / "mistral_v1/tokenizer.json"),
            tokenizers.Tokenizer.from_file(
                str(llm / "mistral_v1/tokenizer.json")
            ),
        ),
        "WordPiece tokenizer.json (BERT uncased)": lambda: (
            ours.load_tokenizer(llm / "bert_uncased/tokenizer.json"),
            tokenizers.Tokenizer.from_file(
                str(llm / "bert_uncased/tokenizer.json")
            ),
        ),
        "Unigram tokenizer.json (ALBERT, from its .model)": lambda: (
            unigram_pair("albert", "albert")
        ),
        "Unigram tokenizer.json (T5 / XLM-R style, ALBERT's .model)": (
            lambda: unigram_pair("albert", "spm")
        ),
    }
    print("| tokenizer | corpus | lines | tokenize lines/s | offsets (byte) "
          "lines/s | ratio | offsets (char) lines/s | ratio | offsets parity "
          "with HF |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for name, build in builds.items():
        if selected and not any(x in name for x in selected):
            continue
        tokenizer, hf = build()
        runners = {
            "tokenize": steady_runner(lambda t: (tokenizer(t),), lines),
            "byte": steady_runner(
                lambda t: tokenizer.tokenize_with_offsets(
                    t, return_word_ids=True
                ),
                lines,
            ),
            "char": steady_runner(
                lambda t: tokenizer.tokenize_with_offsets(
                    t, unit="char", return_word_ids=True
                ),
                lines,
            ),
        }
        speed = {k: [] for k in runners}
        for run in runners.values():
            run()  # warm-up
        for _ in range(repeats):
            for key, run in runners.items():
                speed[key].append(run())
        speed = {k: statistics.median(v) for k, v in speed.items()}
        same = 0
        for start in range(0, len(lines), BATCH):
            batch = lines[start : start + BATCH]
            ids, starts, ends, words = tokenizer.tokenize_with_offsets(
                tf.constant(batch), unit="char", return_word_ids=True
            )
            for e, i, s, t, w in zip(
                hf.encode_batch(batch, add_special_tokens=False),
                ids.to_list(),
                starts.to_list(),
                ends.to_list(),
                words.to_list(),
            ):
                same += (
                    e.ids == i
                    and [list(o) for o in e.offsets]
                    == [[a, b] for a, b in zip(s, t)]
                    and [-1 if x is None else x for x in e.word_ids] == w
                )
        print(
            f"| {name} | wikitext | {len(lines)} | {speed['tokenize']:,.0f} "
            f"| {speed['byte']:,.0f} | {speed['byte'] / speed['tokenize']:.2f} "
            f"| {speed['char']:,.0f} | {speed['char'] / speed['tokenize']:.2f} "
            f"| {same}/{len(lines)} |",
            flush=True,
        )


def python_runner(encode_batch, lines):
    def run():
        tokens = 0
        for start in range(0, len(lines), BATCH):
            for ids in encode_batch(lines[start : start + BATCH]):
                tokens += len(ids)
        return tokens

    return run


def ids_of(tokenizer, lines):
    out = []
    for start in range(0, len(lines), BATCH):
        ids = tokenizer(tf.constant(lines[start : start + BATCH]))
        # keras-hub returns Python lists in eager mode, ours a RaggedTensor.
        out += ids.to_list() if hasattr(ids, "to_list") else list(ids)
    return out


def unigram_json_file(name, kind):
    """A Unigram `tokenizer.json` made from a shared-data `.model` the way
    transformers' converters make it (`tests/tokenizers/unigram_json.py`):
    shared/data holds none."""
    folder = pathlib.Path(tempfile.mkdtemp(prefix="bench_unigram_"))
    return unigram_json.write(folder, name, kind)[0]


def unigram_pair(name, kind):
    """Ours and HF's on `unigram_json_file(name, kind)`."""
    path = unigram_json_file(name, kind)
    return ours.load_tokenizer(path), tokenizers.Tokenizer.from_file(str(path))


def hf_encoder(tok):
    def encode(batch):
        return [
            e.ids for e in tok.encode_batch(batch, add_special_tokens=False)
        ]

    return encode


def tiktoken_encoder(encoding):
    def encode(batch):
        return encoding.encode_ordinary_batch(batch)

    return encode


def families(selected):
    """`{name: lazily built family}`; a family is a function returning a
    dict with `ours`, optional `keras-hub`, `references` (name, encode),
    the first of which sets the parity, and `corpora`."""
    bert = str(DATA / "bert/bert-base-uncased-vocab.txt")
    vocab_json = str(DATA / "gpt2/vocab.json")
    merges = str(DATA / "gpt2/merges.txt")
    spm_path = str(DATA / "sentencepiece/mistral-7b-v0.3-tokenizer.model")
    albert_path = str(DATA / "sentencepiece/albert-base-v2-spiece.model")
    llm = DATA / "llm"

    def wordpiece():
        hf_bert = tokenizers.BertWordPieceTokenizer(bert, lowercase=True)
        return {
            "ours": ours.WordPieceTokenizer.from_vocab_file(bert),
            "keras-hub": keras_hub.tokenizers.WordPieceTokenizer(
                vocabulary=bert, lowercase=True, strip_accents=True
            ),
            "references": [("HF tokenizers", hf_encoder(hf_bert))],
            "corpora": CLASSIC_CORPORA,
        }

    def gpt2():
        hf_bpe = tokenizers.ByteLevelBPETokenizer(vocab_json, merges)
        return {
            "ours": ours.BytePairTokenizer.from_files(vocab_json, merges),
            "keras-hub": keras_hub.tokenizers.BytePairTokenizer(
                vocabulary=vocab_json, merges=merges
            ),
            "references": [("HF tokenizers", hf_encoder(hf_bpe))],
            "corpora": CLASSIC_CORPORA,
        }

    def sentencepiece_family(path):
        def build():
            spm = sentencepiece.SentencePieceProcessor(model_file=path)
            return {
                "ours": ours.SentencePieceTokenizer(path),
                "keras-hub": keras_hub.tokenizers.SentencePieceTokenizer(
                    proto=path
                ),
                "references": [("sentencepiece", spm.encode)],
                "corpora": CLASSIC_CORPORA,
            }

        return build

    def metaspace_json():
        def build():
            path = DATA / "llm/mistral_v1/tokenizer.json"
            hf = tokenizers.Tokenizer.from_file(str(path))
            return {
                "ours": tf_input.load_tokenizer(path),
                "references": [("HF tokenizers", hf_encoder(hf))],
                "corpora": CLASSIC_CORPORA,
            }

        return build

    def unigram_json_family(name, kind):
        def build():
            path = unigram_json_file(name, kind)
            hf = tokenizers.Tokenizer.from_file(str(path))
            return {
                "ours": ours.load_tokenizer(path),
                "references": [("HF tokenizers", hf_encoder(hf))],
                "corpora": CLASSIC_CORPORA,
            }

        return build

    def tokenizer_json(folder, with_tiktoken):
        def build():
            path = llm / folder / "tokenizer.json"
            references = [
                (
                    "HF tokenizers",
                    hf_encoder(tokenizers.Tokenizer.from_file(str(path))),
                )
            ]
            if with_tiktoken:
                references.append(("tiktoken", tiktoken_encoder(
                    tiktoken_from_json(path, with_tiktoken))))  # fmt: skip
            return {
                "ours": ours.load_tokenizer(path),
                "references": references,
                "corpora": LLM_CORPORA,
            }

        return build

    def rank_file(name):
        def build():
            path = llm / name / f"{name}_base.tiktoken"
            encoding = tiktoken.Encoding(
                name,
                pat_str=TIKTOKEN_PATTERNS[name],
                mergeable_ranks=load_tiktoken_bpe(str(path)),
                special_tokens=RANK_SPECIALS[name],
            )
            return {
                "ours": ours.load_tokenizer(
                    path, pattern=name, special_token_ids=RANK_SPECIALS[name]
                ),
                "references": [("tiktoken", tiktoken_encoder(encoding))],
                "corpora": LLM_CORPORA,
            }

        return build

    table = {
        "WordPiece (BERT uncased)": wordpiece,
        "byte-level BPE (GPT-2)": gpt2,
        "SentencePiece (Mistral v0.3)": sentencepiece_family(spm_path),
        "SentencePiece (ALBERT, unigram)": sentencepiece_family(albert_path),
        "SentencePiece (Mistral v1 .model)": sentencepiece_family(
            str(DATA / "llm/mistral_v1/tokenizer.model")
        ),
        "SentencePiece-style tokenizer.json (Mistral v1)": metaspace_json(),
        "Unigram tokenizer.json (ALBERT converter)": unigram_json_family(
            "albert", "albert"
        ),
        "Unigram tokenizer.json (sp-test-ja, T5-style converter)": (
            unigram_json_family("ja", "spm")
        ),
        "tokenizer.json (Qwen 3)": tokenizer_json("qwen3", "qwen2"),
        "tokenizer.json (cl100k)": tokenizer_json("cl100k", "cl100k"),
        "tokenizer.json (o200k)": tokenizer_json("o200k", "o200k"),
        "tokenizer.json (DeepSeek V4)": tokenizer_json("deepseek_v4", None),
        "tiktoken (cl100k_base.tiktoken)": rank_file("cl100k"),
        "tiktoken (o200k_base.tiktoken)": rank_file("o200k"),
    }
    return {
        name: build
        for name, build in table.items()
        if not selected or any(f in name for f in selected)
    }


def tiktoken_from_json(path, pattern_name):
    """A tiktoken Encoding with a tokenizer.json's vocabulary as ranks and
    the matching tiktoken pattern (Qwen's regex as it is)."""
    from tf_input.tokenizers._byte_level import token_to_bytes as _token_bytes
    from tf_input.tokenizers.loading import PATTERNS

    data = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    ranks = {
        _token_bytes(token)[0]: i for token, i in data["model"]["vocab"].items()
    }
    specials = {
        t["content"]: t["id"]
        for t in data["added_tokens"]
        if t["id"] >= len(ranks)
    }
    ranks = {raw: i for raw, i in ranks.items() if i < len(ranks)}
    pattern = TIKTOKEN_PATTERNS.get(pattern_name, PATTERNS.get(pattern_name))
    return tiktoken.Encoding(
        str(path),
        pat_str=pattern,
        mergeable_ranks=ranks,
        special_tokens=specials,
    )


def measure_construction(repeats, selected=None):
    """`load_tokenizer` in fresh processes: seconds, peak RSS (o200k, and
    the SentencePiece files; `selected`: substrings of the case names)."""
    script = textwrap.dedent(
        """
        import json, resource, sys, time
        import tf_input
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        path, kwargs = sys.argv[1], json.loads(sys.argv[2])
        start = time.perf_counter()
        tf_input.load_tokenizer(path, **kwargs)
        seconds = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps([seconds, base * 1024, peak * 1024]))
        """
    )
    llm = DATA / "llm" / "o200k"
    cases = {
        "o200k tokenizer.json": (llm, {}),
        "o200k_base.tiktoken": (
            llm / "o200k_base.tiktoken",
            {"pattern": "o200k", "special_token_ids": RANK_SPECIALS["o200k"]},
        ),
        "SentencePiece Mistral v0.3 .model (BPE)": (
            DATA / "sentencepiece/mistral-7b-v0.3-tokenizer.model",
            {},
        ),
        "SentencePiece Mistral v1 .model (BPE)": (
            DATA / "llm/mistral_v1/tokenizer.model",
            {},
        ),
        "SentencePiece-style tokenizer.json Mistral v1 (BPE)": (
            DATA / "llm/mistral_v1/tokenizer.json",
            {},
        ),
        "SentencePiece ALBERT .model (unigram)": (
            DATA / "sentencepiece/albert-base-v2-spiece.model",
            {},
        ),
    }
    unigram = "Unigram tokenizer.json ALBERT (generated)"
    cases[unigram] = (None, {})
    if selected:
        cases = {
            k: v for k, v in cases.items() if any(f in k for f in selected)
        }
    if unigram in cases:
        cases[unigram] = (unigram_json_file("albert", "albert"), {})
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}
    rows = []
    for name, (path, kwargs) in cases.items():
        runs = []
        for _ in range(repeats):
            out = subprocess.run(
                [sys.executable, "-c", script, str(path), json.dumps(kwargs)],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            )
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        seconds = statistics.median(r[0] for r in runs)
        base = statistics.median(r[1] for r in runs)
        peak = statistics.median(r[2] for r in runs)
        rows.append((name, seconds, min(r[0] for r in runs), base, peak))
    print()
    print(
        "| file | construction s (median) | fastest s | process RSS before "
        "(after `import tf_input`) | peak RSS | added by construction |"
    )
    print("|---|---|---|---|---|---|")
    gib = 1 << 30
    for name, seconds, fastest, base, peak in rows:
        print(
            f"| {name} | {seconds:.1f} | {fastest:.1f} | {base / gib:.2f} GiB "
            f"| {peak / gib:.2f} GiB | {(peak - base) / gib:.2f} GiB |"
        )
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--lines",
        type=int,
        default=0,
        help="at most this many lines per corpus, spread evenly (default: "
        "all; a short run gives tf.data start-up too much weight)",
    )
    parser.add_argument(
        "--families", nargs="*", help="substrings of family names to run"
    )
    parser.add_argument(
        "--construction",
        action="store_true",
        help="time load_tokenizer instead (fresh processes)",
    )
    parser.add_argument(
        "--offsets",
        action="store_true",
        help="compare tokenize_with_offsets with tokenize instead",
    )
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument(
        "--no-grappler",
        action="store_true",
        help="tf.config.optimizer disable_meta_optimizer (every tf.data "
        "iterator re-optimizes the map function: most of its start-up)",
    )
    args = parser.parse_args(argv)
    if args.no_grappler:
        tf.config.optimizer.set_experimental_options(
            {"disable_meta_optimizer": True}
        )
    if not DATA.is_dir():
        sys.exit(f"Shared data not found at {DATA}: set TF_INPUT_SHARED_DATA.")
    if args.construction:
        measure_construction(args.repeats, args.families)
        return
    if args.offsets:
        measure_offsets(args.repeats, args.lines, args.families)
        return

    print(
        f"tf_input {tf_input.__version__}, tensorflow {tf.__version__}, "
        f"keras-hub {keras_hub.__version__}, tokenizers "
        f"{tokenizers.__version__}, sentencepiece {sentencepiece.__version__}"
        f", tiktoken {tiktoken.__version__}; {os.cpu_count()} CPUs, "
        f"{platform.machine()}"
    )
    rows = []
    texts = corpora(args.lines)
    for family, build in families(args.families).items():
        impl = build()
        references = impl["references"]
        for corpus in impl["corpora"]:
            lines = texts[corpus]
            want = {}
            for ref_name, ref_encode in references:
                want[ref_name] = []
                for start in range(0, len(lines), BATCH):
                    want[ref_name] += [
                        list(x)
                        for x in ref_encode(lines[start : start + BATCH])
                    ]
            first = references[0][0]
            mine = [n for n in ("ours", "keras-hub") if n in impl]
            parity = {}
            for name in mine:
                got = ids_of(impl[name], lines)
                parity[name] = sum(g == w for g, w in zip(got, want[first]))
            for ref_name, _ in references[1:]:
                parity[ref_name] = sum(
                    g == w for g, w in zip(want[ref_name], want[first])
                )
            runners = {
                name: pipeline_runner(impl[name], lines) for name in mine
            }
            for ref_name, ref_encode in references:
                runners[ref_name] = python_runner(ref_encode, lines)
            times = {name: [] for name in runners}
            tokens = {name: run() for name, run in runners.items()}  # warm-up
            for _ in range(args.repeats):
                for name, run in runners.items():
                    start = time.perf_counter()
                    run()
                    times[name].append(time.perf_counter() - start)
            median = {k: statistics.median(v) for k, v in times.items()}
            steady = steady_runner(impl["ours"], lines)
            steady()  # warm-up
            ours_steady = statistics.median(
                steady() for _ in range(args.repeats)
            )
            rows.append(
                {
                    "family": family,
                    "corpus": corpus,
                    "lines": len(lines),
                    "tokens": tokens["ours"],
                    "lines_per_s": {
                        k: len(lines) / v for k, v in median.items()
                    },
                    "ours_vs": {
                        k: median[k] / median["ours"]
                        for k in median
                        if k != "ours"
                    },
                    "parity": parity,
                    "parity_reference": first,
                    "ours_steady_lines_per_s": ours_steady,
                    "steady_vs": {
                        k: ours_steady / (len(lines) / v)
                        for k, v in median.items()
                        if k not in ("ours", "keras-hub")
                    },
                }
            )
            print_row(rows[-1])
    print()
    print(
        "| tokenizer | corpus | lines | ours lines/s | ours tokens/s | "
        "other lines/s | ours / other | ours steady lines/s | ours steady / "
        "reference | parity (vs the first reference) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        speed = r["lines_per_s"]
        per_line = r["tokens"] / r["lines"]
        others = "; ".join(
            f"{speed[k]:,.0f} ({k})" for k in speed if k != "ours"
        )
        ratios = "; ".join(f"{v:.2f}x {k}" for k, v in r["ours_vs"].items())
        parity = "; ".join(
            f"{k} {v}/{r['lines']}" for k, v in r["parity"].items()
        )
        steady = "; ".join(f"{v:.2f}x {k}" for k, v in r["steady_vs"].items())
        print(
            f"| {r['family']} | {r['corpus']} | {r['lines']} | "
            f"{speed['ours']:,.0f} | {speed['ours'] * per_line:,.0f} | "
            f"{others} | {ratios} | {r['ours_steady_lines_per_s']:,.0f} | "
            f"{steady} | {parity} (vs {r['parity_reference']}) |"
        )
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))


def print_row(r):
    speed = r["lines_per_s"]
    ratios = ", ".join(f"{v:.2f}x {k}" for k, v in r["ours_vs"].items())
    parity = ", ".join(f"{k} {v}/{r['lines']}" for k, v in r["parity"].items())
    steady = ", ".join(f"{v:.2f}x {k}" for k, v in r["steady_vs"].items())
    print(
        f"{r['family']:<34} {r['corpus']:<15} ours {speed['ours']:>9,.0f} "
        f"lines/s ({r['tokens'] / r['lines']:.1f} tok/line)  {ratios}; "
        f"steady {r['ours_steady_lines_per_s']:,.0f} lines/s ({steady}); "
        f"parity {parity}",
        flush=True,
    )


if __name__ == "__main__":
    np.set_printoptions(linewidth=120)
    main()
