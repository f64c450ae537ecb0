import os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf
order = sys.argv[1]
M = "/work/shared/data/sentencepiece/albert-base-v2-spiece.model"
proto = open(M, "rb").read()
if order == "op_first":
    ops = tf.load_op_library("/tmp/spop/_tf_input_spm_ops.so"); import tensorflow_text as tft
else:
    import tensorflow_text as tft; ops = tf.load_op_library("/tmp/spop/_tf_input_spm_ops.so")
import sentencepiece as spm
lines = ["Hello World", "ＡＢＣ ① ﬁ", "我爱北京"]
a = tft.SentencepieceTokenizer(model=proto).tokenize(lines).to_list()
v, s = ops.tf_input_sentence_piece_encode(model_proto=proto, texts=lines)
b = tf.RaggedTensor.from_row_splits(v, s).to_list()
c = spm.SentencePieceProcessor(model_proto=proto).encode(lines)
print(order, "ok; tftext==sp:", a == c, " op==sp:", b == c)
