// TfInputSentencePieceEncode: batch SentencePiece encoding (sentencepiece
// 0.2.3 SentencePieceProcessor, statically linked, symbols hidden) producing
// ragged int32 ids as (values, row_splits).
//
// Inputs:
//   model_proto: string scalar, serialized sentencepiece ModelProto (.model
//                bytes).  The loaded processor is cached per kernel instance
//                and only rebuilt when the bytes change.
//   texts:       string [N]
// Outputs:
//   values:      int32 [T]
//   row_splits:  int64 [N+1]
// Attrs:
//   add_bos, add_eos, reverse: same meaning as sentencepiece's Python encode.
//   num_threads: 0/1 = encode sequentially in the calling thread (best inside
//                tf.data map with num_parallel_calls); >1 = shard the batch
//                over TF's intra-op thread pool.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "sentencepiece_processor.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "absl/synchronization/blocking_counter.h"
#include "tensorflow/core/platform/threadpool.h"

namespace tf_input {
namespace {

using ::tensorflow::DEVICE_CPU;
using ::tensorflow::OpKernel;
using ::tensorflow::OpKernelConstruction;
using ::tensorflow::OpKernelContext;
using ::tensorflow::Tensor;
using ::tensorflow::TensorShape;
using ::tensorflow::tstring;
namespace shape_inference = ::tensorflow::shape_inference;

REGISTER_OP("TfInputSentencePieceEncode")
    .Input("model_proto: string")
    .Input("texts: string")
    .Output("values: int32")
    .Output("row_splits: int64")
    .Attr("add_bos: bool = false")
    .Attr("add_eos: bool = false")
    .Attr("reverse: bool = false")
    .Attr("num_threads: int = 0")
    .SetIsStateful()  // caches a loaded model; also keeps it out of constant folding
    .SetShapeFn([](shape_inference::InferenceContext* c) {
      shape_inference::ShapeHandle unused;
      TF_RETURN_IF_ERROR(c->WithRank(c->input(0), 0, &unused));
      shape_inference::ShapeHandle texts;
      TF_RETURN_IF_ERROR(c->WithRank(c->input(1), 1, &texts));
      c->set_output(0, c->Vector(c->UnknownDim()));
      shape_inference::DimensionHandle n = c->Dim(texts, 0);
      shape_inference::DimensionHandle n1;
      TF_RETURN_IF_ERROR(c->Add(n, 1, &n1));
      c->set_output(1, c->Vector(n1));
      return absl::OkStatus();
    });

struct LoadedModel {
  std::string bytes;
  sentencepiece::SentencePieceProcessor sp;
  int bos_id = -1, eos_id = -1;
};

class SentencePieceEncodeOp : public OpKernel {
 public:
  explicit SentencePieceEncodeOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("add_bos", &add_bos_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("add_eos", &add_eos_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("reverse", &reverse_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("num_threads", &num_threads_));
  }

  void Compute(OpKernelContext* ctx) override {
    static const bool kTime = std::getenv("TF_INPUT_SPM_TIME") != nullptr;
    const auto t_start = kTime ? std::chrono::steady_clock::now()
                               : std::chrono::steady_clock::time_point();
    struct TimeLog {
      bool on; std::chrono::steady_clock::time_point t0; int64_t n = 0;
      ~TimeLog() {
        if (on) fprintf(stderr, "[spm-time] n=%lld us=%.1f\n", (long long)n,
                        std::chrono::duration<double, std::micro>(
                            std::chrono::steady_clock::now() - t0).count());
      }
    } time_log{kTime, t_start};
    const Tensor& model_t = ctx->input(0);
    const Tensor& texts_t = ctx->input(1);
    OP_REQUIRES(ctx, TensorShapeUtils_IsScalar(model_t),
                absl::InvalidArgumentError("model_proto must be a scalar"));
    OP_REQUIRES(ctx, texts_t.dims() == 1,
                absl::InvalidArgumentError("texts must be a vector"));

    std::shared_ptr<const LoadedModel> model;
    OP_REQUIRES_OK(ctx, GetModel(model_t.scalar<tstring>()(), &model));

    const auto texts = texts_t.vec<tstring>();
    const int64_t n = texts.size();
    time_log.n = n;

    Tensor* splits_t = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({n + 1}), &splits_t));
    auto splits = splits_t->vec<int64_t>();

    const int extra = (add_bos_ ? 1 : 0) + (add_eos_ ? 1 : 0);
    auto encode_one = [&](int64_t i, std::vector<int>* ids) -> absl::Status {
      ids->clear();
      const tstring& s = texts(i);
      auto st = model->sp.Encode(std::string_view(s.data(), s.size()), ids);
      if (!st.ok()) return st;
      if (reverse_) std::reverse(ids->begin(), ids->end());
      if (extra) {
        if (add_bos_) ids->insert(ids->begin(), model->bos_id);
        if (add_eos_) ids->push_back(model->eos_id);
      }
      return absl::OkStatus();
    };

    if (num_threads_ <= 1 || n < 64) {
      // Sequential: encode into one growing buffer, then a single copy.
      std::vector<int32_t> values;
      values.reserve(n * 16);
      std::vector<int> ids;
      splits(0) = 0;
      for (int64_t i = 0; i < n; ++i) {
        OP_REQUIRES_OK(ctx, encode_one(i, &ids));
        values.insert(values.end(), ids.begin(), ids.end());
        splits(i + 1) = static_cast<int64_t>(values.size());
      }
      Tensor* values_t = nullptr;
      OP_REQUIRES_OK(ctx, ctx->allocate_output(
                              0, TensorShape({static_cast<int64_t>(values.size())}),
                              &values_t));
      if (!values.empty())
        std::memcpy(values_t->flat<int32_t>().data(), values.data(),
                    values.size() * sizeof(int32_t));
      return;
    }

    // Parallel: per-line results, then gather.
    std::vector<std::vector<int>> per_line(n);
    std::mutex err_mu;
    absl::Status err;
    auto work = [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        auto st = encode_one(i, &per_line[i]);
        if (!st.ok()) {
          std::lock_guard<std::mutex> l(err_mu);
          err = st;
          return;
        }
      }
    };
    // Split into `shards` contiguous chunks of ~equal byte length; run all but
    // the last on TF's intra-op pool, the last in this thread.
    auto* wt = ctx->device()->tensorflow_cpu_worker_threads();
    const int shards = std::max(1, std::min<int>(num_threads_, wt->num_threads));
    int64_t total_bytes = 0;
    for (int64_t i = 0; i < n; ++i) total_bytes += texts(i).size() + 8;
    std::vector<int64_t> bounds{0};
    {
      int64_t acc = 0;
      for (int64_t i = 0; i < n && (int)bounds.size() < shards; ++i) {
        acc += texts(i).size() + 8;
        if (acc * shards >= total_bytes * (int64_t)bounds.size()) bounds.push_back(i + 1);
      }
      bounds.push_back(n);
    }
    const int nchunks = bounds.size() - 1;
    absl::BlockingCounter counter(nchunks - 1);
    for (int c = 0; c + 1 < nchunks; ++c) {
      wt->workers->Schedule([&, c] {
        work(bounds[c], bounds[c + 1]);
        counter.DecrementCount();
      });
    }
    work(bounds[nchunks - 1], bounds[nchunks]);
    counter.Wait();
    OP_REQUIRES_OK(ctx, err);
    splits(0) = 0;
    for (int64_t i = 0; i < n; ++i) splits(i + 1) = splits(i) + per_line[i].size();
    Tensor* values_t = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({splits(n)}), &values_t));
    int32_t* out = values_t->flat<int32_t>().data();
    for (int64_t i = 0; i < n; ++i) {
      if (!per_line[i].empty())
        std::memcpy(out + splits(i), per_line[i].data(),
                    per_line[i].size() * sizeof(int32_t));
    }
  }

 private:
  static bool TensorShapeUtils_IsScalar(const Tensor& t) { return t.dims() == 0; }

  absl::Status GetModel(const tstring& bytes,
                        std::shared_ptr<const LoadedModel>* out) {
    {
      std::lock_guard<std::mutex> l(mu_);
      // Fast path: same bytes as this kernel's cached model (memcmp of a few
      // hundred KB is ~10-30us, negligible against a 1024-line batch).
      if (model_ && SameBytes(*model_, bytes)) {
        *out = model_;
        return absl::OkStatus();
      }
    }
    std::shared_ptr<const LoadedModel> m;
    TF_RETURN_IF_ERROR(GlobalGetOrLoad(bytes, &m));
    if (add_bos_ && m->bos_id < 0)
      return absl::InvalidArgumentError("add_bos=True but model has no bos");
    if (add_eos_ && m->eos_id < 0)
      return absl::InvalidArgumentError("add_eos=True but model has no eos");
    std::lock_guard<std::mutex> l(mu_);
    model_ = m;
    *out = std::move(m);
    return absl::OkStatus();
  }

  static bool SameBytes(const LoadedModel& m, const tstring& b) {
    return m.bytes.size() == b.size() &&
           std::memcmp(m.bytes.data(), b.data(), b.size()) == 0;
  }

  // Process-wide cache: tf.data instantiates the map function (and therefore
  // constructs new kernels) for every new iterator, so a per-kernel cache
  // alone reloads the model (10-40 ms) on every epoch.  Keep the last few
  // models alive process-wide, keyed by their bytes.
  static absl::Status GlobalGetOrLoad(const tstring& bytes,
                                      std::shared_ptr<const LoadedModel>* out) {
    static std::mutex* gmu = new std::mutex;
    static auto* cache = new std::vector<std::shared_ptr<const LoadedModel>>;
    constexpr size_t kMaxModels = 4;
    std::lock_guard<std::mutex> l(*gmu);  // also serializes concurrent loads
    for (size_t i = 0; i < cache->size(); ++i) {
      if (SameBytes(*(*cache)[i], bytes)) {
        *out = (*cache)[i];
        return absl::OkStatus();
      }
    }
    auto m = std::make_shared<LoadedModel>();
    m->bytes.assign(bytes.data(), bytes.size());
    absl::Status st = m->sp.LoadFromSerializedProto(m->bytes);
    if (!st.ok()) return st;
    m->bos_id = m->sp.bos_id();
    m->eos_id = m->sp.eos_id();
    load_count().fetch_add(1);
    if (std::getenv("TF_INPUT_SPM_DEBUG"))
      fprintf(stderr, "[TfInputSentencePieceEncode] loaded model #%d (%zu bytes)\n",
              load_count().load(), bytes.size());
    if (cache->size() >= kMaxModels) cache->erase(cache->begin());
    cache->push_back(m);
    *out = std::move(m);
    return absl::OkStatus();
  }
  static std::atomic<int>& load_count() {
    static std::atomic<int> c{0};
    return c;
  }

  bool add_bos_ = false, add_eos_ = false, reverse_ = false;
  int num_threads_ = 0;
  std::mutex mu_;
  std::shared_ptr<const LoadedModel> model_;
};

REGISTER_KERNEL_BUILDER(Name("TfInputSentencePieceEncode").Device(DEVICE_CPU),
                        SentencePieceEncodeOp);

}  // namespace
}  // namespace tf_input
