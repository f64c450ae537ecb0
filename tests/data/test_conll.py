"""`read_conll`: CoNLL-U and CoNLL-2003 files to `(words, labels)`."""

import pytest

from tests.shared_data import data_path
from tests.shared_data import requires_shared_data
from tf_input.data.conll import read_conll

CONLLU = (
    "# sent_id = 1\n"
    "# text = Vámonos al mar.\n"
    "1-2\tVámonos\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "1\tVamos\tir\tVERB\t_\t_\t0\troot\t_\t_\n"
    "2\tnos\tnosotros\tPRON\t_\t_\t1\tobj\t_\t_\n"
    "3-4\tal\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "3\ta\ta\tADP\t_\t_\t5\tcase\t_\t_\n"
    "4\tel\tel\tDET\t_\t_\t5\tdet\t_\t_\n"
    "5\tmar\tmar\tNOUN\t_\t_\t1\tobl\t_\tSpaceAfter=No\n"
    "5.1\tva\tir\tVERB\t_\t_\t_\t_\t0:root\t_\n"
    "6\t.\t.\tPUNCT\t_\t_\t1\tpunct\t_\t_\n"
    "\n"
    "# sent_id = 2\n"
    "1\tSí\tsí\tINTJ\t_\t_\t0\troot\t_\t_\n"
)


def test_conllu_syntactic_words_and_a_column(tmp_path):
    path = tmp_path / "es.conllu"
    path.write_text(CONLLU, encoding="utf-8")
    assert list(read_conll(path)) == [
        (
            ["Vamos", "nos", "a", "el", "mar", "."],
            ["VERB", "PRON", "ADP", "DET", "NOUN", "PUNCT"],
        ),
        (["Sí"], ["INTJ"]),  # No blank line after the last sentence.
    ]
    deprel = [labels for _, labels in read_conll(path, label="deprel")]
    assert deprel[0] == ["root", "obj", "case", "det", "obl", "punct"]


def test_conll2003_columns_docstart_and_crlf(tmp_path):
    path = tmp_path / "train.txt"
    path.write_bytes(
        b"-DOCSTART- -X- -X- O\r\n\r\n"
        b"EU NNP B-NP B-ORG\r\nrejects VBZ B-VP O\r\n\r\n\r\n"
        b"Peter NNP B-NP B-PER\r\nBlackburn NNP I-NP I-PER\r\n"
    )
    assert list(read_conll(path)) == [
        (["EU", "rejects"], ["B-ORG", "O"]),
        (["Peter", "Blackburn"], ["B-PER", "I-PER"]),
    ]
    pos = [labels for _, labels in read_conll(path, label="pos")]
    assert pos == [["NNP", "VBZ"], ["NNP", "NNP"]]


@pytest.mark.parametrize(
    "text, fmt, message",
    [
        ("EU NNP B-ORG\n", "conll2003", r"line 1: 3 columns .* four"),
        ("1\tEU\tEU\tPROPN\n", "conllu", r"line 1: 4 columns .* ten tab"),
        (
            "1\ta\ta\tX\t_\t_\t0\troot\t_\t_\n"
            "1\tb\tb\tX\t_\t_\t0\troot\t_\t_\n",
            "conllu",
            r"line 2: word ID 1 after 1 words .* blank line missing",
        ),
        ("x\ta\ta\tX\t_\t_\t0\troot\t_\t_\n", "conllu", r"ID 'x' is not"),
    ],
)
def test_bad_lines_name_the_file_and_line(tmp_path, text, fmt, message):
    path = tmp_path / "bad.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message) as error:
        list(read_conll(path, format=fmt))
    assert str(path) in str(error.value)


def test_unknown_format_and_label(tmp_path):
    path = tmp_path / "a.conllu"
    path.write_text(CONLLU, encoding="utf-8")
    with pytest.raises(ValueError, match=r"format='iob'.*'conll2003'"):
        read_conll(path, format="iob").__next__()
    with pytest.raises(ValueError, match=r"label='ner'.*'upos'"):
        read_conll(path, label="ner").__next__()


@requires_shared_data
def test_the_universal_dependencies_test_file():
    path = data_path("corpora", "zh_gsdsimp-ud-test.conllu")
    sentences = list(read_conll(path))
    # An independent count: the sentence ids, and the word lines.
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(sentences) == sum(x.startswith("# sent_id") for x in lines)
    word_lines = [x.split("\t") for x in lines if x[:1].isdigit()]
    assert sum(len(words) for words, _ in sentences) == len(word_lines)
    assert [w for words, _ in sentences for w in words] == [
        x[1] for x in word_lines
    ]
    # The words of a sentence spell its text without the spaces.
    texts = [x[len("# text = ") :] for x in lines if x.startswith("# text")]
    for (words, tags), text in zip(sentences, texts, strict=True):
        assert "".join(words) == text.replace(" ", "")
        assert len(tags) == len(words)
    tags = {tag for _, labels in sentences for tag in labels}
    assert tags <= {
        "ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM",
        "PART", "PRON", "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X",
    }  # fmt: skip
