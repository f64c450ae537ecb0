// Minimal shim of absl::StatusBuilder (abseil 20260817) for TF 2.21's bundled
// abseil 20250814, enough for sentencepiece's RET_CHECK macros.
#ifndef TF_INPUT_SHIM_ABSL_STATUS_BUILDER_H_
#define TF_INPUT_SHIM_ABSL_STATUS_BUILDER_H_
#include <sstream>
#include <string>
#include "absl/status/status.h"
#include "absl/status/statusor.h"
namespace absl {
ABSL_NAMESPACE_BEGIN
class StatusBuilder {
 public:
  explicit StatusBuilder(absl::StatusCode code) : code_(code) {}
  template <typename T>
  StatusBuilder& operator<<(const T& v) { os_ << v; return *this; }
  operator absl::Status() const { return absl::Status(code_, os_.str()); }
  template <typename T>
  operator absl::StatusOr<T>() const { return absl::Status(*this); }
 private:
  absl::StatusCode code_;
  std::ostringstream os_;
};
ABSL_NAMESPACE_END
}  // namespace absl
#endif
