"""SavedModel round trip: tf.function using the op, saved, reloaded in a fresh
process after tf.load_op_library (and with tensorflow_text imported first)."""
import os, subprocess, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
SO = "/tmp/spop/_tf_input_spm_ops.so"
MODEL = "/work/shared/data/sentencepiece/mistral-7b-v0.3-tokenizer.model"
EXPORT = "/tmp/spop/sm_export"
LINES = ["Hello world!", "", "我爱北京天安门", "Ünïcödé ﬁ ①  spaces  "]

if len(sys.argv) == 1:
    import shutil
    import tensorflow as tf
    ops = tf.load_op_library(SO)

    class Tok(tf.Module):
        def __init__(self, proto):
            super().__init__()
            self.asset = tf.saved_model.Asset(MODEL)    # .model shipped as asset
            self.proto = tf.Variable(proto, trainable=False)  # or as a variable
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def __call__(self, texts):
            v, s = ops.tf_input_sentence_piece_encode(model_proto=self.proto, texts=texts)
            return tf.RaggedTensor.from_row_splits(v, s)
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def from_asset(self, texts):
            proto = tf.io.read_file(self.asset)
            v, s = ops.tf_input_sentence_piece_encode(model_proto=proto, texts=texts)
            return v, s

    m = Tok(open(MODEL, "rb").read())
    before = m(tf.constant(LINES)).to_list()
    shutil.rmtree(EXPORT, ignore_errors=True)
    tf.saved_model.save(m, EXPORT)
    print("saved; saved_model.pb bytes:", os.path.getsize(f"{EXPORT}/saved_model.pb"))
    out = subprocess.run([sys.executable, __file__, "load"], capture_output=True, text=True)
    print(out.stdout.strip()); print(out.stderr.strip()[-2000:] if out.returncode else "")
    print("expected:", before)
else:
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (same process as TF Text's sentencepiece)
    import sentencepiece as spm
    try:
        tf.saved_model.load(EXPORT)
        print("load WITHOUT load_op_library: unexpectedly OK")
    except Exception as e:
        print("load WITHOUT load_op_library fails as expected:", type(e).__name__)
    tf.load_op_library(SO)
    r = tf.saved_model.load(EXPORT)
    got = r(tf.constant(LINES)).to_list()
    v, s = r.from_asset(tf.constant(LINES))
    ref = spm.SentencePieceProcessor(model_file=MODEL).encode(LINES)
    print("reloaded:", got)
    print("matches sentencepiece:", got == ref,
          "| asset path matches:", tf.RaggedTensor.from_row_splits(v, s).to_list() == ref)
